package remote

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/peer"

	"github.com/equeue-go/equeue/internal/logwindow"
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
	log    *slog.Logger
	now    func() time.Time
	window logwindow.Limiter
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	return &refusalLog{log: log, now: time.Now, window: logwindow.Limiter{Window: refusalWindow, Burst: refusalBurst}}
}

// refused logs one refused call, unless this window's lines are used up.
func (r *refusalLog) refused(ctx context.Context, method string, err error) {
	ok, left := r.window.Allow(r.now())
	if !ok {
		return
	}
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
