package remote

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue/internal/logwindow"
)

// Refused calls (no token, an unknown one, missing rights) are what an
// operator needs to see, but a misconfigured client retrying in a loop
// must not flood the log: at most refusalBurst lines of each reason per
// refusalWindow, and the next line of a reason logged says how many of it
// were left out meanwhile. Each reason has its own lines, so a flood of
// calls without a known token (a scanner, a client with a stale token)
// does not hide the line saying that a known token lacks a right.
const (
	refusalWindow = 10 * time.Second
	refusalBurst  = 10
)

// The reasons a call is refused for, as the log names them.
const (
	reasonUnauthenticated  = "unauthenticated"   // no token, or an unknown one
	reasonPermissionDenied = "permission denied" // a known token lacks a right
	reasonOther            = "other"
)

// refusalLog logs refused calls at Warn level, rate-limited per reason.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time
	// windows has one limiter per reason: set by newRefusalLog, then
	// only read.
	windows map[string]*logwindow.Limiter
}

func newRefusalLog(log *slog.Logger) *refusalLog {
	r := &refusalLog{log: log, now: time.Now, windows: map[string]*logwindow.Limiter{}}
	for _, reason := range []string{reasonUnauthenticated, reasonPermissionDenied, reasonOther} {
		r.windows[reason] = &logwindow.Limiter{Window: refusalWindow, Burst: refusalBurst}
	}
	return r
}

// refusalReason is the reason err refused a call for.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, ErrUnauthenticated) || status.Code(err) == codes.Unauthenticated:
		return reasonUnauthenticated
	case errors.Is(err, ErrPermissionDenied) || status.Code(err) == codes.PermissionDenied:
		return reasonPermissionDenied
	}
	return reasonOther
}

// refused logs one refused call, unless this window's lines of its reason
// are used up.
func (r *refusalLog) refused(ctx context.Context, method string, err error) {
	reason := refusalReason(err)
	ok, left := r.windows[reason].Allow(r.now())
	if !ok {
		return
	}
	attrs := []any{"method", method, "peer", peerAddr(ctx), "reason", reason, "err", err}
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
