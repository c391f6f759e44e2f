package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// setCookie is the cookie a response sets under name, or nil.
func setCookie(t *testing.T, p page, name string) *http.Cookie {
	t.Helper()
	for _, line := range p.header.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		require.NoError(t, err)
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

// TestConsole_CookiesAtTheRootOverHTTPSAreHostPrefixed: a console served
// at the root of its host and reached over HTTPS (here behind a trusted
// proxy that says so) names its cookies with the __Host- prefix, which a
// browser accepts only Secure, with Path=/ and no Domain, so that no
// sibling subdomain or plain-HTTP page can set them; the sign-in works
// with them. Over plain HTTP, or under a path prefix (where Path=/ would
// hand the cookies to the rest of the host), the names stay unprefixed.
func TestConsole_CookiesAtTheRootOverHTTPSAreHostPrefixed(t *testing.T) {
	e := openEngine(t)
	srv := httptest.NewServer(console.New(e, console.Options{Tokens: tokens, TrustedProxies: loopbackProxy}))
	t.Cleanup(srv.Close)
	s := &site{srv: srv, hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(s.hc.CloseIdleConnections)
	const https = "X-Forwarded-Proto"

	lp := s.get(t, "/login", https, "https")
	require.Equal(t, http.StatusOK, lp.status)
	anon := setCookie(t, lp, "__Host-equeue_console_csrf")
	require.NotNil(t, anon, "the CSRF cookie is __Host- prefixed: %v", lp.header.Values("Set-Cookie"))
	assert.True(t, anon.Secure)
	assert.Equal(t, "/", anon.Path)
	assert.Empty(t, anon.Domain)

	form := url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {"/"}}
	in := s.post(t, "/login", form, https, "https", "Cookie", "__Host-equeue_console_csrf="+anon.Value)
	require.Equal(t, http.StatusSeeOther, in.status, in.body)
	sess := setCookie(t, in, "__Host-equeue_console")
	require.NotNil(t, sess, "the session cookie is __Host- prefixed: %v", in.header.Values("Set-Cookie"))
	assert.True(t, sess.Secure)
	assert.Equal(t, "/", sess.Path)
	assert.Equal(t, http.StatusOK, s.get(t, "/", https, "https", "Cookie", "__Host-equeue_console="+sess.Value).status, "signed in")
	assert.Equal(t, http.StatusSeeOther, s.get(t, "/", https, "https", "Cookie", "equeue_console="+sess.Value).status,
		"over HTTPS at the root only the prefixed cookie counts")

	plain := s.get(t, "/login")
	assert.NotNil(t, setCookie(t, plain, "equeue_console_csrf"), "over plain HTTP: %v", plain.header.Values("Set-Cookie"))
	under := serve(t, e, console.Options{Tokens: tokens, TrustedProxies: loopbackProxy}).get(t, prefix+"login", https, "https")
	assert.NotNil(t, setCookie(t, under, "equeue_console_csrf"), "under a prefix: %v", under.header.Values("Set-Cookie"))
}
