package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/loopback"
)

// AdminHandler serves a node's cluster administration over HTTP, for
// `equeue cluster`:
//
//	GET  /cluster/status                      the node's Status as JSON
//	POST /cluster/add?id=ID&raft=HOST:PORT    add a voter, once caught up (leader only)
//	POST /cluster/remove?id=ID                remove a server (leader only)
//	POST /cluster/transfer[?id=ID]            hand leadership over (leader only)
//
// Without WithAdminAuth it has no authentication: serve it on loopback or a
// private network. On a loopback address it then answers only requests
// addressed to localhost or a loopback address (any port; any other Host
// gets 403), so that a web page of another site whose name was made to
// resolve to 127.0.0.1 (DNS rebinding) cannot read the status through an
// operator's browser; on another address it answers any Host. Changes are
// refused (403) to requests a web browser sends (they carry Origin or
// Sec-Fetch-Site), so that a web page cannot make an operator's browser
// change the cluster. With it, every request needs "Authorization: Bearer
// TOKEN": a missing or unknown token gets 401, a token that may read but not
// change the cluster gets 403 on a change. Changes asked of a follower fail
// with 409 and the leader's ID, and so does a removal that would leave too
// few voters that answer (ErrWouldLoseQuorum), and an addition of a node
// of another cluster (ErrForeignCluster); an addition of a node that did
// not catch up in time (ErrNotCaughtUp) gets 504. A missing or malformed
// parameter, an ID the configuration does not hold, or a new address for
// the leader's own ID, gets 400. A failure's body is {"error": TEXT}.
func AdminHandler(n *Node, opts ...AdminOption) http.Handler {
	var cfg adminConfig
	for _, o := range opts {
		o(&cfg)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cluster/status", cfg.guard(false, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, n.Status())
	}))
	// changeWithin bounds a change by d; change by 30 s.
	changeWithin := func(d time.Duration, f func(ctx context.Context, r *http.Request) error) http.HandlerFunc {
		return cfg.guard(true, func(w http.ResponseWriter, r *http.Request) {
			if fromBrowser(r) {
				writeJSON(w, http.StatusForbidden, map[string]string{"error": "a browser's request may not change the cluster: use equeue cluster or another HTTP client"})
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			if err := f(ctx, r); err != nil {
				writeJSON(w, changeStatus(err), map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		})
	}
	need := func(r *http.Request, names ...string) error {
		for _, k := range names {
			if r.URL.Query().Get(k) == "" {
				return errors.Join(equeue.ErrInvalidArgument, errors.New("missing parameter "+k))
			}
		}
		return nil
	}
	change := func(f func(ctx context.Context, r *http.Request) error) http.HandlerFunc {
		return changeWithin(30*time.Second, f)
	}
	// AddVoter waits for the new node to catch up.
	mux.HandleFunc("POST /cluster/add", changeWithin(addVoterTimeout, func(ctx context.Context, r *http.Request) error {
		if err := need(r, "id", "raft"); err != nil {
			return err
		}
		return n.AddVoter(ctx, r.URL.Query().Get("id"), r.URL.Query().Get("raft"))
	}))
	mux.HandleFunc("POST /cluster/remove", change(func(ctx context.Context, r *http.Request) error {
		if err := need(r, "id"); err != nil {
			return err
		}
		return n.RemoveServer(ctx, r.URL.Query().Get("id"))
	}))
	mux.HandleFunc("POST /cluster/transfer", change(func(ctx context.Context, r *http.Request) error {
		return n.TransferLeadership(ctx, r.URL.Query().Get("id"))
	}))
	if cfg.auth != nil {
		return mux
	}
	return loopbackHostsOnly(mux)
}

// loopbackHostsOnly is h, a handler without authentication, refusing with
// 403 a request that arrived on a loopback address addressed to a Host
// other than localhost or a loopback address: a web page of another site
// whose name was made to resolve to 127.0.0.1 (DNS rebinding), which the
// operator's browser would let read the status. On any other address h
// answers every Host.
func loopbackHostsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback.Rebound(r) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "this cluster admin server has no authentication and answers only requests to localhost or a loopback address, not to " + strconv.Quote(r.Host)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// fromBrowser reports whether r came from a web browser: browsers mark
// every request with Sec-Fetch-Site ("none" only for one the user typed)
// and a POST with Origin, while `equeue cluster` and other HTTP clients
// send neither. Without WithAdminAuth a change needs nothing but a POST
// with its parameters in the query, which any web page could make a
// browser send to a node on loopback or a private network (a form posted
// across sites, or a page whose name was rebound to the node's address);
// changes from browsers are refused instead.
func fromBrowser(r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	return r.Header.Get("Origin") != "" || (site != "" && site != "none")
}

// AdminAuth decides whether a bearer token may use the administration
// handler: to read the status (change is false) or to change the cluster
// (change is true). ok is false for an unknown token.
type AdminAuth func(token string, change bool) (allowed, ok bool)

// AdminOption configures AdminHandler.
type AdminOption func(*adminConfig)

// WithAdminAuth makes AdminHandler require a bearer token that auth admits.
func WithAdminAuth(auth AdminAuth) AdminOption {
	return func(c *adminConfig) { c.auth = auth }
}

type adminConfig struct {
	auth AdminAuth
}

// guard admits a request to h when no authentication is set or its bearer
// token is allowed to read (change false) or change the cluster.
func (c *adminConfig) guard(change bool, h http.HandlerFunc) http.HandlerFunc {
	if c.auth == nil {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 7235).
		scheme, tok, found := strings.Cut(r.Header.Get("Authorization"), " ")
		found = found && strings.EqualFold(scheme, "Bearer")
		allowed, ok := false, false
		if found && tok != "" {
			allowed, ok = c.auth(tok, change)
		}
		switch {
		case !ok:
			w.Header().Set("WWW-Authenticate", `Bearer realm="equeue cluster"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a known bearer token is required"})
		case !allowed:
			writeJSON(w, http.StatusForbidden, map[string]string{"error": "this token may not change the cluster"})
		default:
			h(w, r)
		}
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// changeStatus is the HTTP status of a change that failed with err.
func changeStatus(err error) int {
	switch {
	case errors.Is(err, equeue.ErrNotLeader), errors.Is(err, ErrWouldLoseQuorum), errors.Is(err, ErrForeignCluster):
		return http.StatusConflict
	case errors.Is(err, ErrNotCaughtUp):
		return http.StatusGatewayTimeout
	case errors.Is(err, equeue.ErrInvalidArgument):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
