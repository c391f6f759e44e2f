package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

var tokens = map[string]remote.Rights{
	"admin-secret":   remote.RightAll,
	"watcher-secret": remote.RightConsume,
	"sender-secret":  remote.RightProduce,
}

// login signs s in with tok and returns the response to the login POST.
func login(t *testing.T, s *site, tok, next string) page {
	t.Helper()
	lp := s.get(t, prefix+"login?next="+url.QueryEscape(next))
	require.Equal(t, http.StatusOK, lp.status)
	return s.post(t, prefix+"login", url.Values{"csrf": {csrf(t, lp)}, "token": {tok}, "next": {next}})
}

func TestConsole_TokensAndRights(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)

	t.Run("anonymous is sent to the login form and cannot act", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		pg := s.get(t, prefix+"groups/billing")
		require.Equal(t, http.StatusSeeOther, pg.status)
		assert.Equal(t, prefix+"login?next="+url.QueryEscape(prefix+"groups/billing"), pg.header.Get("Location"))
		lp := s.get(t, prefix+"login")
		tok := csrf(t, lp)
		for _, w := range writes(tok) {
			assert.Equal(t, http.StatusUnauthorized, s.post(t, prefix+w.path, w.form).status, w.path)
		}
		assertUnchanged(t, ctx, sd)
	})

	t.Run("unknown token is refused", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		pg := login(t, s, "guess", prefix)
		assert.Equal(t, http.StatusUnauthorized, pg.status)
		assert.Contains(t, pg.body, "Unknown token")
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix).status, "still not signed in")
		assert.Equal(t, http.StatusUnauthorized, s.get(t, prefix, "Authorization", "Bearer guess").status)
	})

	t.Run("login needs the form's CSRF token", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		pg := s.post(t, prefix+"login", url.Values{"token": {"admin-secret"}})
		assert.Equal(t, http.StatusForbidden, pg.status)
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix).status, "not signed in")
	})

	t.Run("consume-only sees but cannot change anything", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		pg := login(t, s, "watcher-secret", prefix+"groups/billing")
		require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
		assert.Equal(t, prefix+"groups/billing", pg.header.Get("Location"))
		for _, p := range pages {
			pg := s.get(t, prefix+p)
			require.Equal(t, http.StatusOK, pg.status, p)
			body := strings.ReplaceAll(pg.body, `action="`+prefix+`logout"`, "")
			assert.Equal(t, 1, strings.Count(strings.ToLower(pg.body), `method="post"`), "%s: only the sign-out form", p)
			assert.NotContains(t, body, "Reset offsets", p)
		}
		tok := csrf(t, s.get(t, prefix+"groups/billing"))
		for _, w := range writes(tok) {
			pg := s.post(t, prefix+w.path, w.form)
			assert.Equal(t, http.StatusForbidden, pg.status, w.path)
			assert.Contains(t, pg.body, "admin right", w.path)
		}
		assertUnchanged(t, ctx, sd)
	})

	t.Run("produce-only sees nothing", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		require.Equal(t, http.StatusForbidden, login(t, s, "sender-secret", prefix).status, "no session is started")
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix).status)
		assert.Equal(t, http.StatusForbidden, s.get(t, prefix, "Authorization", "Bearer sender-secret").status)
		assert.Equal(t, http.StatusForbidden, s.get(t, prefix+"topics/orders/messages", "Authorization", "Bearer sender-secret").status)
	})

	t.Run("bearer tokens work without a login", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		assert.Equal(t, http.StatusOK, s.get(t, prefix, "Authorization", "Bearer watcher-secret").status)
		pg := s.get(t, prefix+"topics/orders", "Authorization", "Bearer admin-secret")
		require.Equal(t, http.StatusOK, pg.status)
		tok := csrf(t, pg)
		assert.Equal(t, http.StatusForbidden, s.post(t, prefix+"topics/orders/queues", url.Values{"count": {"1"}}, "Authorization", "Bearer admin-secret").status, "bearer callers need the CSRF token too")
		assert.Equal(t, http.StatusForbidden, s.post(t, prefix+"topics/orders/queues", url.Values{"count": {"1"}, "csrf": {tok}}, "Authorization", "Bearer watcher-secret").status, "the token is bound to the caller")
		assertUnchanged(t, ctx, sd)
		assert.Equal(t, http.StatusSeeOther, s.post(t, prefix+"topics/orders/queues", url.Values{"count": {"1"}, "csrf": {tok}}, "Authorization", "Bearer admin-secret").status)
		ti, err := e.Topic(ctx, "orders")
		require.NoError(t, err)
		assert.Len(t, ti.Queues, 5)
	})

	t.Run("admin acts, and sign-out ends the session", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		require.Equal(t, http.StatusSeeOther, login(t, s, "admin-secret", "//evil.example/").status)
		pg := s.get(t, prefix+"groups/billing")
		require.Equal(t, http.StatusOK, pg.status)
		assert.Contains(t, pg.body, "Reset offsets")
		tok := csrf(t, pg)
		assert.Equal(t, http.StatusSeeOther, s.post(t, prefix+"logout", url.Values{"csrf": {tok}}).status)
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix+"groups/billing").status, "signed out")
	})
}

func TestConsole_LoginRedirectStaysInTheConsole(t *testing.T) {
	e := openEngine(t)
	s := serve(t, e, console.Options{Tokens: tokens})
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/other/app", prefix + "topics/x"} {
		pg := login(t, s, "admin-secret", next)
		require.Equal(t, http.StatusSeeOther, pg.status)
		loc := pg.header.Get("Location")
		assert.True(t, strings.HasPrefix(loc, prefix), "next %q led to %q", next, loc)
	}
}

func TestConsole_LoginIsThrottledAfterFailures(t *testing.T) {
	e := openEngine(t)
	s := serve(t, e, console.Options{Tokens: tokens})
	for i := range 10 {
		assert.Equal(t, http.StatusUnauthorized, login(t, s, "guess", prefix).status, "attempt %d", i)
	}
	pg := login(t, s, "admin-secret", prefix)
	assert.Equal(t, http.StatusTooManyRequests, pg.status, "even the right token waits")
	assert.Contains(t, pg.body, "Too many failed sign-ins")
	assert.Equal(t, http.StatusTooManyRequests, s.get(t, prefix, "Authorization", "Bearer admin-secret").status, "nor a bearer token")

	// Unknown bearer tokens count too.
	s = serve(t, e, console.Options{Tokens: tokens})
	for range 10 {
		assert.Equal(t, http.StatusUnauthorized, s.get(t, prefix, "Authorization", "Bearer guess").status)
	}
	assert.Equal(t, http.StatusTooManyRequests, s.get(t, prefix, "Authorization", "Bearer admin-secret").status)
	assert.Equal(t, http.StatusTooManyRequests, login(t, s, "admin-secret", prefix).status)
}

// TestConsole_OtherAuthorizationSchemesAreNotBearerTokens serves the console
// behind a proxy that asks for HTTP Basic authentication, so every request
// carries "Authorization: Basic": that is no unknown bearer token, and the
// visitor signs in on the form as usual. The scheme is case-insensitive.
func TestConsole_OtherAuthorizationSchemesAreNotBearerTokens(t *testing.T) {
	e := openEngine(t)
	s := serve(t, e, console.Options{Tokens: tokens})
	basic := []string{"Authorization", "Basic b3BzOnByb3h5LXBhc3N3b3Jk"}
	for range 12 {
		pg := s.get(t, prefix, basic...)
		require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
		assert.Equal(t, prefix+"login?next="+url.QueryEscape(prefix), pg.header.Get("Location"))
	}
	lp := s.get(t, prefix+"login", basic...)
	require.Equal(t, http.StatusOK, lp.status)
	pg := s.post(t, prefix+"login", url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {prefix}}, basic...)
	require.Equal(t, http.StatusSeeOther, pg.status, "not throttled by the proxy's header: %s", pg.body)
	assert.Equal(t, http.StatusOK, s.get(t, prefix, basic...).status, "signed in")

	s = serve(t, e, console.Options{Tokens: tokens})
	assert.Equal(t, http.StatusOK, s.get(t, prefix, "Authorization", "bearer watcher-secret").status)
	assert.Equal(t, http.StatusOK, s.get(t, prefix, "Authorization", "BEARER watcher-secret").status)
}
