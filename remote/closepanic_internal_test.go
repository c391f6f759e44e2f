package remote

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/goid"
)

// errCallbackPanic is what a callback of TestClose_AfterACallbackPanicked
// panics with.
var errCallbackPanic = equeue.ErrInvalidArgument

// A Close reports the appends still pending on its own goroutine: a
// callback that panics there unwinds that Close, which its caller may
// recover. The close was then marked done by nothing (its channel was
// closed at its end, no longer deferred), so every later Close waited
// for ever. It returns now.
func TestClose_AfterACallbackPanickedLaterClosesReturn(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, longPause := serveBusyStream(t)
			c := dial(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c.AppendAsync(ctx, reentryReq, func(equeue.AppendResult, error) {
				panic(errCallbackPanic)
			})
			// The append waits for its busy retry: the Close reports it.
			within(t, longPause, "the append's long busy pause")
			conn := connOf(t, c) // closed by the Close (again below: harmless)
			recovered := make(chan any, 1)
			go func() {
				defer func() { recovered <- recover() }()
				_ = c.Close()
			}()
			require.Equal(t, errCallbackPanic, within(t, recovered, "the Close whose callback panics"))
			require.NoError(t, within(t, closeAsync(c), "a Close after the panic"))
			_ = conn.Close()
		})
	}
}

// A Close whose callback panicked stopped where the panic unwound it:
// the other appends it had to report were never reported, and the
// connection stayed open until a second Close. One Close now does the
// whole close, and the panic then goes on to its caller.
func TestClose_AfterACallbackPanickedOneCloseIsDone(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveBusyStream(t)
			bothPaused := make(chan struct{})
			var paused atomic.Int32
			hook := func(wait time.Duration) {
				if wait >= 100*busyBackoffMin && paused.Add(1) == 2 {
					close(bothPaused)
				}
			}
			testHookBusyBackoff.Store(&hook) // serveBusyStream's cleanup unsets it
			c := dial(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var closer atomic.Uint64 // the goroutine that calls Close
			var panicked atomic.Bool
			reports := make(chan error, 2)
			cb := func(_ equeue.AppendResult, err error) {
				reports <- err
				// The first callback the Close runs panics; one that runs
				// elsewhere must not (nothing would recover it).
				if goid.ID() == closer.Load() && panicked.CompareAndSwap(false, true) {
					panic(errCallbackPanic)
				}
			}
			c.AppendAsync(ctx, reentryReq, cb)
			c.AppendAsync(ctx, reentryReq, cb)
			// Both appends wait for their busy retries: the Close reports them.
			within(t, bothPaused, "the appends' long busy pauses")
			conn, ok := connOf(t, c).(*grpc.ClientConn)
			require.True(t, ok)
			recovered := make(chan any, 1)
			go func() {
				defer func() { recovered <- recover() }()
				closer.Store(goid.ID())
				_ = c.Close()
			}()
			require.Equal(t, errCallbackPanic, within(t, recovered, "the Close whose callback panics"))
			require.True(t, panicked.Load())
			for range 2 {
				select {
				case err := <-reports:
					assert.ErrorIs(t, err, equeue.ErrClosed)
				default:
					t.Error("an append the Close had to report was never reported")
				}
			}
			assert.Equal(t, connectivity.Shutdown, conn.GetState(), "one Close closes the connection")
			require.NoError(t, within(t, closeAsync(c), "a Close after the panic"))
		})
	}
}
