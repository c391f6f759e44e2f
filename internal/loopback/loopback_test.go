package loopback

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsHost(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST", "localhost.", "localhost:8080", "localhost.:8080",
		"127.0.0.1", "127.0.0.1:80", "127.9.8.7", "127.0.0.1.", "[::1]", "[::1]:7853", "::1", "[::ffff:127.0.0.1]:80"} {
		assert.True(t, IsHost(h), h)
	}
	for _, h := range []string{"", "evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.evil.example",
		"10.0.0.5:80", "[::2]:80", "0.0.0.0", "local host", "localhost..", "[::1"} {
		assert.False(t, IsHost(h), h)
	}
}

func TestRebound(t *testing.T) {
	on := func(addr net.Addr, host string) *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		if addr != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, addr))
		}
		return r
	}
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80}
	lo6 := &net.TCPAddr{IP: net.IPv6loopback, Port: 80}
	private := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 80}
	assert.True(t, Rebound(on(lo, "evil.example")))
	assert.True(t, Rebound(on(lo6, "evil.example:80")))
	assert.False(t, Rebound(on(lo, "localhost:80")))
	assert.False(t, Rebound(on(lo6, "[::1]:80")))
	assert.False(t, Rebound(on(private, "evil.example")), "not loopback: a private network's")
	assert.False(t, Rebound(on(&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "evil.example")))
	assert.False(t, Rebound(on(nil, "evil.example")), "no server said where it arrived")
}
