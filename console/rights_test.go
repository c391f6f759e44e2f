package console_test

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// TestConsole_LookOnlyTokensCannotActAnywhere posts every state change
// with the caller's own valid CSRF token, first asking for the
// confirmation page and then confirmed, as a consume-only token signed in
// and as a bearer, as tokens that may not even look, and signed out: each
// one is refused (403, or 401 without a known token), shows no
// confirmation page and changes nothing. The routes that change the
// engine are enumerated from the console itself, so a new one without a
// request in writes() fails the test.
func TestConsole_LookOnlyTokensCannotActAnywhere(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	toks := map[string]remote.Rights{"watcher-secret": remote.RightConsume, "sender-secret": remote.RightProduce,
		"nothing-secret": 0, "look-and-send": remote.RightConsume | remote.RightProduce}

	// Every action route has a request in writes().
	actions := console.Actions(console.New(e, console.Options{Prefix: prefix, Tokens: toks}))
	require.NotEmpty(t, actions)
	routes := http.NewServeMux()
	for _, a := range actions {
		routes.HandleFunc(a, func(http.ResponseWriter, *http.Request) {})
	}
	covered := map[string]bool{}
	for _, w := range writes("") {
		_, pattern := routes.Handler(httptest.NewRequest(http.MethodPost, prefix+w.path, nil))
		covered[pattern] = true
	}
	for _, a := range actions {
		assert.True(t, covered[a], "%s has no request in writes(): add one that would change the engine", a)
	}

	type caller struct {
		name   string
		header []string
		signIn string
		status int
	}
	callers := []caller{
		{name: "consume, signed in", signIn: "watcher-secret"},
		{name: "consume and produce, signed in", signIn: "look-and-send"},
		{name: "consume, bearer", header: []string{"Authorization", "Bearer watcher-secret"}},
		{name: "produce, bearer", header: []string{"Authorization", "Bearer sender-secret"}},
		{name: "no right, bearer", header: []string{"Authorization", "Bearer nothing-secret"}},
		{name: "signed out", status: http.StatusUnauthorized},
	}
	for _, c := range callers {
		s := serve(t, e, console.Options{Tokens: toks})
		if c.signIn != "" {
			require.Equal(t, http.StatusSeeOther, login(t, s, c.signIn, prefix).status, c.name)
		}
		// The caller's own CSRF token, from a page it may see. A caller
		// that may see none gets no page with a form, so no token to send.
		tok := "none to be had"
		if m := csrfRE.FindStringSubmatch(s.get(t, prefix+"groups/billing", c.header...).body); m != nil {
			tok = m[1]
		}
		for _, w := range writes(tok) {
			for _, confirm := range []bool{false, true} {
				f := url.Values{}
				for k, v := range w.form {
					f[k] = v
				}
				if !confirm {
					f.Del("confirm")
				}
				pg := s.post(t, prefix+w.path, f, c.header...)
				assert.Equal(t, cmp.Or(c.status, http.StatusForbidden), pg.status, "%s, %s, confirm %v: %s", c.name, w.path, confirm, pg.body)
				assert.NotContains(t, pg.body, `name="confirm"`, "%s, %s: no confirmation page", c.name, w.path)
			}
		}
	}
	assertUnchanged(t, ctx, sd)
}

// TestConsole_SignInOfATokenThatMayNotLookIsRefused signs in with tokens
// that may not view the console (produce only, no right at all): the
// sign-in is refused on the form, which says why, and starts no session,
// so such a token holds no session slot.
func TestConsole_SignInOfATokenThatMayNotLookIsRefused(t *testing.T) {
	e := openEngine(t)
	toks := map[string]remote.Rights{"sender-secret": remote.RightProduce, "nothing-secret": 0, "admin-secret": remote.RightAll}
	for _, tok := range []string{"sender-secret", "nothing-secret"} {
		s := serve(t, e, console.Options{Tokens: toks})
		pg := login(t, s, tok, prefix+"topics/orders")
		assert.Equal(t, http.StatusForbidden, pg.status, "%s: %s", tok, pg.body)
		assert.Contains(t, pg.body, "may not view the console", tok)
		for _, line := range pg.header.Values("Set-Cookie") {
			ck, err := http.ParseSetCookie(line)
			require.NoError(t, err)
			assert.NotEqual(t, "equeue_console", ck.Name, "%s: no session cookie", tok)
		}
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix).status, "%s: not signed in", tok)
		// The form is still there to sign in with another token.
		require.Equal(t, http.StatusSeeOther, login(t, s, "admin-secret", prefix).status)
		assert.Equal(t, http.StatusOK, s.get(t, prefix).status)
	}
}
