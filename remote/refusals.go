package remote

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/peer"
)

// Refused calls (no token, an unknown one, missing rights) are what an
// operator needs to see, but a misconfigured client retrying in a loop
// must not flood the log: at most refusalBurst lines per refusalWindow,
// and the next line logged says how many were left out meanwhile.
const (
	refusalWindow = 10 * time.Second
	refusalBurst  = 10
)

// refusalLog logs refused calls at Warn level, rate-limited.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu         sync.Mutex
	windowFrom time.Time
	logged     int
	suppressed int
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, now: time.Now}
}

// refused logs one refused call, unless this window's lines are used up.
func (r *refusalLog) refused(ctx context.Context, method string, err error) {
	r.mu.Lock()
	now := r.now()
	if now.Sub(r.windowFrom) >= refusalWindow {
		r.windowFrom, r.logged = now, 0
	}
	if r.logged >= refusalBurst {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	r.logged++
	left := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()

	attrs := []any{"method", method, "peer", peerAddr(ctx), "err", err}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	r.log.Warn("call refused", attrs...)
}

// peerAddr is the caller's address, or "unknown".
func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
