package remote

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/equeue-go/equeue/internal/logwindow"
)

// Failed calls whose status says the server could not answer them as the
// engine meant (Internal, DataLoss) or that their outcome is unknown
// (Unknown: a leader that lost its leadership with writes in flight
// answers each so) are logged at Warn. A failover with thousands of appends
// in flight must not log a line per append: at most failureBurst lines of
// each kind per failureWindow, the next line of a kind logged saying how
// many of it were left out. An unknown outcome and an internal failure are
// two kinds, so a failover's flood does not hide an internal error.
const (
	failureWindow = 10 * time.Second
	failureBurst  = 10
)

// The other failures are refusals (not the leader, busy, a topic not
// found, ...), logged at Debug level: a client sending 10k appends a
// follower refuses, on a stream or as unary calls, must not make 10k lines
// either. They are bounded as the failures are, each status code on its
// own, so a flood of one refusal does not hide another.

// failureLog logs failed calls at Warn level and refused ones at Debug
// level, rate-limited per kind.
type failureLog struct {
	log *slog.Logger
	now func() time.Time
	// unknown counts the lines of unknown outcomes, internal the others.
	unknown, internal logwindow.Limiter
	// refused counts the Debug lines of refusals, per status code (the
	// last one for a code past those gRPC defines).
	refused [codes.Unauthenticated + 2]logwindow.Limiter
}

func newFailureLog(log *slog.Logger) *failureLog {
	f := &failureLog{log: log, now: time.Now,
		unknown:  logwindow.Limiter{Window: failureWindow, Burst: failureBurst},
		internal: logwindow.Limiter{Window: failureWindow, Burst: failureBurst}}
	for i := range f.refused {
		f.refused[i] = logwindow.Limiter{Window: failureWindow, Burst: failureBurst}
	}
	return f
}

// failed logs one failed call of method whose status code is code.
func (f *failureLog) failed(method string, code codes.Code, err error) {
	var l *logwindow.Limiter
	level := slog.LevelWarn
	switch code {
	case codes.Unknown:
		l = &f.unknown
	case codes.Internal, codes.DataLoss:
		l = &f.internal
	default:
		if !f.log.Enabled(context.Background(), slog.LevelDebug) {
			return // nothing to log: no lock taken per refused append
		}
		level = slog.LevelDebug
		l = &f.refused[min(int(code), len(f.refused)-1)]
	}
	ok, left := l.Allow(f.now())
	if !ok {
		return
	}
	attrs := []any{"method", method, "err", err}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	f.log.Log(context.Background(), level, "call failed", attrs...)
}
