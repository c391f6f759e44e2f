package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// forgeries are the CSRF fields a forged POST can carry instead of the
// page's: none, a made-up one, and another visitor's (of another console,
// which has its own secret, and of this one).
func forgeries(t *testing.T, s *site, o console.Options) map[string]func(url.Values) {
	t.Helper()
	form := prefix + "topics/orders" // a page with a form for an anonymous visitor
	if o.Tokens != nil {
		form = prefix + "login"
	}
	other := openEngine(t)
	require.NoError(t, other.CreateTopic(ctxT(t), "orders", 1))
	foreign := csrf(t, serve(t, other, o).get(t, form))
	neighbour := &site{srv: s.srv, hc: &http.Client{CheckRedirect: s.hc.CheckRedirect}}
	t.Cleanup(neighbour.hc.CloseIdleConnections)
	near := csrf(t, neighbour.get(t, form))
	return map[string]func(url.Values){
		"no token":                  func(f url.Values) { f.Del("csrf") },
		"empty token":               func(f url.Values) { f.Set("csrf", "") },
		"made-up token":             func(f url.Values) { f.Set("csrf", "forged") },
		"another console's token":   func(f url.Values) { f.Set("csrf", foreign) },
		"another visitor's token":   func(f url.Values) { f.Set("csrf", near) },
		"two tokens, the first bad": func(f url.Values) { f["csrf"] = append([]string{"forged"}, f["csrf"]...) },
	}
}

// TestConsole_EveryActionRefusesAForgedPost posts every state change, the
// sign-out and the sign-in with a missing, made-up or foreign CSRF token,
// with and without tokens configured, and with the caller's own token but
// none of its cookies (a cross-site request: the cookies are SameSite
// Strict): each one is refused and changes nothing.
func TestConsole_EveryActionRefusesAForgedPost(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	for _, o := range []console.Options{{}, {Tokens: tokens}} {
		s := serve(t, e, o)
		if o.Tokens != nil {
			require.Equal(t, http.StatusSeeOther, login(t, s, "admin-secret", prefix).status)
		}
		pg := s.get(t, prefix+"groups/billing")
		require.Equal(t, http.StatusOK, pg.status)
		tok := csrf(t, pg)
		acts := append(writes(tok), write{"logout", url.Values{"csrf": {tok}}})
		for name, forge := range forgeries(t, s, o) {
			for _, w := range acts {
				f := url.Values{}
				for k, v := range w.form {
					f[k] = append([]string(nil), v...)
				}
				forge(f)
				pg := s.post(t, prefix+w.path, f)
				assert.Equal(t, http.StatusForbidden, pg.status, "tokens %v, %s, %s: %s", o.Tokens != nil, name, w.path, pg.body)
			}
		}
		// The caller's own token without the caller's cookies.
		bare := &site{srv: s.srv, hc: &http.Client{CheckRedirect: s.hc.CheckRedirect}}
		t.Cleanup(bare.hc.CloseIdleConnections)
		for _, w := range acts {
			pg := bare.post(t, prefix+w.path, w.form)
			assert.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, pg.status, "tokens %v, cookieless %s: %s", o.Tokens != nil, w.path, pg.body)
		}
		assertUnchanged(t, ctx, sd)
		if o.Tokens != nil {
			assert.Equal(t, http.StatusOK, s.get(t, prefix).status, "the forged sign-outs left the session signed in")
			for _, line := range login(t, s, "admin-secret", prefix).header.Values("Set-Cookie") {
				ck, err := http.ParseSetCookie(line)
				require.NoError(t, err)
				assert.Equal(t, http.SameSiteStrictMode, ck.SameSite, ck.Name)
				assert.True(t, ck.HttpOnly, ck.Name)
			}
		}
	}

	// A forged sign-in does not sign the visitor in.
	s := serve(t, e, console.Options{Tokens: tokens})
	lp := s.get(t, prefix+"login")
	require.Equal(t, http.StatusOK, lp.status)
	for name, forge := range forgeries(t, s, console.Options{Tokens: tokens}) {
		f := url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {prefix}}
		forge(f)
		assert.Equal(t, http.StatusForbidden, s.post(t, prefix+"login", f).status, name)
		assert.Equal(t, http.StatusSeeOther, s.get(t, prefix).status, "%s: not signed in", name)
	}
}
