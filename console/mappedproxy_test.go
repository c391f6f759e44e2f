package console_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// TestConsole_TrustedProxyAsIPv4MappedIPv6 names the loopback proxy in
// IPv4-mapped IPv6 form, as a network and as one address: the console
// takes it for the IPv4 peer it is, as the CLI's --console-trusted-proxy
// does, so a client's failed sign-ins count against the client, not the
// proxy, and its X-Forwarded-Proto is believed.
func TestConsole_TrustedProxyAsIPv4MappedIPv6(t *testing.T) {
	e := openEngine(t)
	for _, p := range []string{"::ffff:127.0.0.0/104", "::ffff:127.0.0.1/128"} {
		t.Run(p, func(t *testing.T) {
			s := serve(t, e, console.Options{Tokens: tokens, TrustedProxies: []netip.Prefix{netip.MustParsePrefix(p)}})
			for range 10 {
				require.Equal(t, http.StatusUnauthorized, loginVia(t, s, "guess", "198.51.100.7").status)
			}
			assert.Equal(t, http.StatusTooManyRequests, loginVia(t, s, "admin-secret", "198.51.100.7").status, "the guesser waits")
			assert.Equal(t, http.StatusSeeOther, loginVia(t, s, "admin-secret", "198.51.100.8").status, "another client of the proxy does not")
			assert.Equal(t, map[string]bool{"equeue_console_csrf": true},
				secureCookies(t, serve(t, e, console.Options{Tokens: tokens, TrustedProxies: []netip.Prefix{netip.MustParsePrefix(p)}}).get(t, prefix+"login", "X-Forwarded-Proto", "https")))
		})
	}
}
