package main

import (
	"net"
	"net/http"
	"strconv"

	"github.com/equeue-go/equeue/internal/loopback"
)

// isLoopback reports whether addr, a listener's address, is on the
// loopback interface.
func isLoopback(addr net.Addr) bool {
	return loopback.IsAddr(addr)
}

// onLoopbackHostsOnly is h served on a listener at addr: on a loopback
// address it answers only requests to a loopback name (see
// loopbackHostsOnly), what naming the server in the refusal, e.g. "this
// metrics server"; on any other address it is h. Serve's operator
// endpoints (/metrics, /healthz, pprof, a cluster node's admin) use it:
// on a loopback address they trust whoever reaches them (pprof even with
// tokens, for go tool pprof), while on a network address the tokens guard
// them.
func onLoopbackHostsOnly(addr net.Addr, what string, h http.Handler) http.Handler {
	if !isLoopback(addr) {
		return h
	}
	return loopbackHostsOnly(what, h)
}

// loopbackHostsOnly serves only requests addressed to a loopback name
// (localhost, 127.0.0.1, [::1]; any port: loopback.IsHost), refusing the
// others with 403 and a message that begins with what, e.g. "this metrics
// server". A server on a loopback address that trusts whoever reaches it
// could be reached by a web page of another site through the operator's
// browser by DNS rebinding (the site's own name made to resolve to
// 127.0.0.1): the browser then takes the server for that site, lets the
// page read its answers, and sends that site's name as Host, which is
// refused here.
func loopbackHostsOnly(what string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopback.IsHost(r.Host) {
			http.Error(w, what+" answers only requests to localhost or a loopback address, not to "+strconv.Quote(r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
