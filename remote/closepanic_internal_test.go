package remote

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
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
			conn := connOf(t, c) // the panic leaves it open: closed below
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
