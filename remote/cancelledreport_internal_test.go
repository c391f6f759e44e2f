package remote

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// An append whose context ended while it was in flight was reported by
// the goroutine its context's end started, which Close did not wait for:
// its callback could run after Close returned. Its callback here waits
// until either Close has returned (the late callback) or Close waits for
// the reports of ended contexts: a Close that did not wait for them would
// return first.
func TestClient_CloseWaitsForTheReportOfAnEndedContext(t *testing.T) {
	c, err := Dial(serveHolding(t), nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	waits := make(chan struct{})
	hook := func() { close(waits) }
	testHookCloseWaitsCancelled.Store(&hook)
	defer testHookCloseWaitsCancelled.Store(nil)

	started, release := make(chan struct{}), make(chan struct{})
	var reported atomic.Bool
	var got error
	c.AppendAsync(ctx, reentryReq, func(_ equeue.AppendResult, err error) {
		got = err
		close(started)
		<-release
		reported.Store(true)
	})
	for deadline := time.Now().Add(time.Minute); !inFlight(c, 1); time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the append is in flight")
	}
	cancel()
	within(t, started, "the report of the ended context")

	closed := make(chan struct{})
	go func() {
		assert.NoError(t, c.Close())
		close(closed)
	}()
	select {
	case <-waits:
		close(release)
		within(t, closed, "Close")
	case <-closed:
		close(release)
		t.Fatal("Close returned while the callback of an append whose context ended ran")
	}
	assert.True(t, reported.Load(), "the callback returned before Close")
	require.ErrorIs(t, got, equeue.ErrIndeterminate)
	require.ErrorIs(t, got, context.Canceled)
}

// inFlight reports whether n appends are in flight on c's stream.
func inFlight(c *Client, n int) bool {
	c.pipe.mu.Lock()
	defer c.pipe.mu.Unlock()
	return c.pipe.cur != nil && len(c.pipe.cur.inFlight) == n
}
