package console_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// loopbackProxy trusts the test server's peer, as a console behind a
// reverse proxy on the same host would.
var loopbackProxy = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// loginVia posts a sign-in with tok as a proxy would forward it, with
// X-Forwarded-For xff, and returns the response.
func loginVia(t *testing.T, s *site, tok, xff string) page {
	t.Helper()
	lp := s.get(t, prefix+"login")
	require.Equal(t, http.StatusOK, lp.status)
	return s.post(t, prefix+"login", url.Values{"csrf": {csrf(t, lp)}, "token": {tok}, "next": {prefix}}, "X-Forwarded-For", xff)
}

// TestConsole_ThrottleIgnoresForwardedForByDefault sends failed sign-ins
// each with another X-Forwarded-For: without trusted proxies the header is
// the client's say, and they all count against the peer.
func TestConsole_ThrottleIgnoresForwardedForByDefault(t *testing.T) {
	s := serve(t, openEngine(t), console.Options{Tokens: tokens})
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, loginVia(t, s, "guess", fmt.Sprintf("198.51.100.%d", i)).status)
	}
	pg := loginVia(t, s, "admin-secret", "198.51.100.200")
	assert.Equal(t, http.StatusTooManyRequests, pg.status)
	assert.Contains(t, pg.body, "from this address")
}

// TestConsole_ThrottleBehindTrustedProxy serves the console behind a
// trusted proxy: each client is throttled by the address the proxy saw,
// not by the proxy's, and what a client writes into the header itself
// does not change that.
func TestConsole_ThrottleBehindTrustedProxy(t *testing.T) {
	s := serve(t, openEngine(t), console.Options{Tokens: tokens,
		TrustedProxies: append([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, loopbackProxy...)})
	for range 10 {
		require.Equal(t, http.StatusUnauthorized, loginVia(t, s, "guess", "198.51.100.7").status)
	}
	pg := loginVia(t, s, "admin-secret", "198.51.100.7")
	assert.Equal(t, http.StatusTooManyRequests, pg.status, "the guesser waits")
	assert.Contains(t, pg.body, "from this address")
	assert.Equal(t, http.StatusTooManyRequests, loginVia(t, s, "admin-secret", "203.0.113.9, 198.51.100.7").status,
		"an address the client put left of the proxy's is not believed")
	assert.Equal(t, http.StatusTooManyRequests, loginVia(t, s, "admin-secret", "198.51.100.7, 10.1.2.3").status,
		"a second trusted proxy is passed over")
	assert.Equal(t, http.StatusTooManyRequests, s.get(t, prefix, "Authorization", "Bearer admin-secret", "X-Forwarded-For", "198.51.100.7").status,
		"nor a bearer token")
	assert.Equal(t, http.StatusOK, s.get(t, prefix, "Authorization", "Bearer admin-secret", "X-Forwarded-For", "198.51.100.8").status,
		"another client of the proxy is not throttled")
	assert.Equal(t, http.StatusSeeOther, loginVia(t, s, "admin-secret", "198.51.100.8").status)
}

// TestConsole_ThrottleTakesAnIPv6ClientByItsSlash64 fails sign-ins from
// one IPv6 address: every address of its /64 waits, the next /64 does not.
func TestConsole_ThrottleTakesAnIPv6ClientByItsSlash64(t *testing.T) {
	s := serve(t, openEngine(t), console.Options{Tokens: tokens, TrustedProxies: loopbackProxy})
	for i := range 10 {
		require.Equal(t, http.StatusUnauthorized, loginVia(t, s, "guess", fmt.Sprintf("2001:db8:1:2::%x", i+1)).status)
	}
	assert.Equal(t, http.StatusTooManyRequests, loginVia(t, s, "admin-secret", "2001:db8:1:2:ffff:ffff:ffff:fffe").status)
	assert.Equal(t, http.StatusSeeOther, loginVia(t, s, "admin-secret", "[2001:db8:1:3::1]:4711").status)
}
