// Package loopback tells whether an HTTP server that trusts whoever
// reaches it on the loopback interface is asked by a name that is not
// loopback's: a web page of another site, whose name was made to resolve
// to 127.0.0.1 (DNS rebinding), reached through the operator's browser.
// The browser takes the server for that site, lets the page read its
// answers, and sends that site's name as Host. `equeue serve`'s operator
// endpoints, cluster.AdminHandler without authentication and the console
// without tokens refuse such requests.
package loopback

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// IsAddr reports whether addr, a listener's or a connection's local
// address, is on the loopback interface.
func IsAddr(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// IsHost reports whether host, a request's Host, names this machine's
// loopback: localhost or a loopback address (127.0.0.0/8, ::1), with or
// without a port, with or without a trailing dot, in any case.
func IsHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	host = strings.TrimSuffix(host, ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// Rebound reports whether r arrived on a loopback address (as the
// http.Server that read it says in its context, under
// http.LocalAddrContextKey) addressed to a Host that is not loopback's:
// what a web page reaching the server by DNS rebinding sends. A request
// whose local address is unknown (one not read by an http.Server) or
// not loopback is not.
func Rebound(r *http.Request) bool {
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return addr != nil && IsAddr(addr) && !IsHost(r.Host)
}
