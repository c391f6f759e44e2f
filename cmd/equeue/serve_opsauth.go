package main

import (
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"

	"github.com/equeue-go/equeue/remote"
)

// requireOpsToken guards h, an operator endpoint of serve (/metrics,
// pprof), with the gRPC server's tokens (remote.Server.HTTPBearer): with
// tokens, it answers only a request carrying a token of the whole engine
// (no @NAMESPACE) with the admin right. Such an endpoint shows the whole
// engine (the topic and group names and counts of every namespace, or the
// process's memory and goroutines), as only the admin calls of the whole
// engine do. A request without a token, or with an unknown one, gets 401
// with a Bearer challenge; one whose token lacks the admin right, or is
// scoped to a namespace, gets 403. Without tokens h answers every request.
func requireOpsToken(srv *remote.Server, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rights, ns, err := srv.HTTPBearer(r)
		switch {
		case errors.Is(err, remote.ErrUnauthenticated):
			w.Header().Set("WWW-Authenticate", `Bearer realm="equeue"`)
			http.Error(w, "unauthenticated: send \"Authorization: Bearer TOKEN\" with a token of the whole engine that has the admin right", http.StatusUnauthorized)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case ns != "" || rights&remote.RightAdmin == 0:
			http.Error(w, "forbidden: this endpoint shows the whole engine; it needs a token of the whole engine (no @NAMESPACE) that has the admin right", http.StatusForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// warnOps logs, when serve has tokens (tokens is not empty), what may be
// wrong with the operator endpoint what (e.g. "/metrics") served on addr:
// that none of wholeEngine (the tokens without @NAMESPACE) has the admin
// right, so it answers no token, and that it is plain HTTP on an address
// other than loopback, so its tokens cross the network in clear text.
func warnOps(log *slog.Logger, what string, addr net.Addr, tokens, wholeEngine map[string]remote.Rights) {
	if len(tokens) == 0 {
		return
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(wholeEngine)), func(r remote.Rights) bool { return r&remote.RightAdmin != 0 }) {
		log.Warn(what + " answers no token: it needs a --token with the admin right and without @NAMESPACE")
	}
	if !isLoopback(addr) {
		log.Warn(what+" is plain HTTP: its tokens are sent in clear text; serve it on a loopback address behind a TLS proxy on an untrusted network", "addr", addr.String())
	}
}
