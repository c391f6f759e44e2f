package remote

import (
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

// failureLog logs failed calls at Warn level, rate-limited per kind, and
// the others at Debug level.
type failureLog struct {
	log *slog.Logger
	now func() time.Time
	// unknown counts the lines of unknown outcomes, internal the others.
	unknown, internal logwindow.Limiter
}

func newFailureLog(log *slog.Logger) *failureLog {
	return &failureLog{log: log, now: time.Now,
		unknown:  logwindow.Limiter{Window: failureWindow, Burst: failureBurst},
		internal: logwindow.Limiter{Window: failureWindow, Burst: failureBurst}}
}

// failed logs one failed call of method whose status code is code.
func (f *failureLog) failed(method string, code codes.Code, err error) {
	var l *logwindow.Limiter
	switch code {
	case codes.Unknown:
		l = &f.unknown
	case codes.Internal, codes.DataLoss:
		l = &f.internal
	default:
		f.log.Debug("call failed", "method", method, "err", err)
		return
	}
	ok, left := l.Allow(f.now())
	if !ok {
		return
	}
	attrs := []any{"method", method, "err", err}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	f.log.Warn("call failed", attrs...)
}
