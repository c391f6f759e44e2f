package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/equeue-go/equeue"
)

// AdminHandler serves a node's cluster administration over HTTP, for
// `equeue cluster`:
//
//	GET  /cluster/status                      the node's Status as JSON
//	POST /cluster/add?id=ID&raft=HOST:PORT    add a voter (leader only)
//	POST /cluster/remove?id=ID                remove a server (leader only)
//	POST /cluster/transfer[?id=ID]            hand leadership over (leader only)
//
// It has no authentication: serve it on loopback or a private network.
// Changes asked of a follower fail with 409 and the leader's ID.
func AdminHandler(n *Node) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cluster/status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, n.Status())
	})
	change := func(f func(ctx context.Context, r *http.Request) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
			defer cancel()
			if err := f(ctx, r); err != nil {
				code := http.StatusInternalServerError
				if errors.Is(err, equeue.ErrNotLeader) {
					code = http.StatusConflict
				} else if errors.Is(err, equeue.ErrInvalidArgument) {
					code = http.StatusBadRequest
				}
				writeJSON(w, code, map[string]string{"error": err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"result": "ok"})
		}
	}
	need := func(r *http.Request, names ...string) error {
		for _, k := range names {
			if r.URL.Query().Get(k) == "" {
				return errors.Join(equeue.ErrInvalidArgument, errors.New("missing parameter "+k))
			}
		}
		return nil
	}
	mux.HandleFunc("POST /cluster/add", change(func(ctx context.Context, r *http.Request) error {
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
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
