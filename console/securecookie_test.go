package console_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// nonLoopback trusts a proxy network that the test's peer is not in.
var nonLoopback = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}

// secureCookies reports, for each cookie a response sets, whether it is
// marked Secure.
func secureCookies(t *testing.T, p page) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, line := range p.header.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		require.NoError(t, err)
		out[ck.Name] = ck.Secure
	}
	require.NotEmpty(t, out, "the response sets a cookie")
	return out
}

// signInWithProto signs in with the admin token, the login POST carrying
// X-Forwarded-Proto proto, and returns the response to it.
func signInWithProto(t *testing.T, s *site, proto string) page {
	t.Helper()
	lp := s.get(t, prefix+"login")
	require.Equal(t, http.StatusOK, lp.status)
	pg := s.post(t, prefix+"login", url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {prefix}}, "X-Forwarded-Proto", proto)
	require.Equal(t, http.StatusSeeOther, pg.status)
	return pg
}

// TestConsole_CookiesAreSecureBehindATrustedTLSProxy serves the console
// over plain HTTP behind a proxy that terminates TLS: from a trusted proxy
// X-Forwarded-Proto: https makes the session and CSRF cookies Secure; from
// any other peer the header is not believed.
func TestConsole_CookiesAreSecureBehindATrustedTLSProxy(t *testing.T) {
	e := openEngine(t)
	t.Run("trusted proxy", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens, TrustedProxies: loopbackProxy})
		assert.Equal(t, map[string]bool{"equeue_console": true}, secureCookies(t, signInWithProto(t, s, "https")))
		assert.Equal(t, map[string]bool{"equeue_console_csrf": true},
			secureCookies(t, serve(t, e, console.Options{Tokens: tokens, TrustedProxies: loopbackProxy}).get(t, prefix+"login", "X-Forwarded-Proto", "HTTPS")))
		assert.Equal(t, map[string]bool{"equeue_console": false}, secureCookies(t, signInWithProto(t, s, "http")),
			"a proxy reached over HTTP says so")
	})
	t.Run("untrusted peer", func(t *testing.T) {
		s := serve(t, e, console.Options{Tokens: tokens})
		assert.Equal(t, map[string]bool{"equeue_console": false}, secureCookies(t, signInWithProto(t, s, "https")))
		assert.Equal(t, map[string]bool{"equeue_console_csrf": false}, secureCookies(t, serve(t, e, console.Options{Tokens: tokens}).get(t, prefix+"login", "X-Forwarded-Proto", "https")))
		other := serve(t, e, console.Options{Tokens: tokens, TrustedProxies: nonLoopback})
		assert.Equal(t, map[string]bool{"equeue_console": false}, secureCookies(t, signInWithProto(t, other, "https")),
			"trusted proxies that do not hold the peer")
	})
}
