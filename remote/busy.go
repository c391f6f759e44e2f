package remote

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// Bounds of the client's backoff while the server is busy.
const (
	busyBackoffMin = 5 * time.Millisecond
	busyBackoffMax = time.Second
)

// retryBusy is a client interceptor that calls again, backing off with
// jitter, while the server refuses the call with ErrBusy. The server refuses
// before running the call, so a retry cannot apply it twice.
func retryBusy(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	wait := busyBackoffMin
	for {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err == nil || !errors.Is(fromStatus(err), ErrBusy) {
			return err
		}
		if m, ok := ctx.Value(sentKey{}).(*sentMarker); ok {
			// The refused attempt ran nothing: only a later one's request
			// leaving the client may leave the call's outcome unknown.
			m.sent.Store(false)
		}
		t := time.NewTimer(wait/2 + time.Duration(rand.Int64N(int64(wait/2)+1)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		if hook := testHookBusyRetry.Load(); hook != nil {
			(*hook)()
		}
		wait = min(2*wait, busyBackoffMax)
	}
}

// testHookBusyRetry, when set by a test, runs in retryBusy once a busy
// call's backoff is over, before the call is sent again.
var testHookBusyRetry atomic.Pointer[func()]
