package equeue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// had reports whether the lock's wait of done has ended.
func had(done <-chan error) bool {
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// TestGateLock_ArrivalOrderAndCancelledWaiters: a gateLock is had in the
// order it is asked for, so a shared waiter that came after an exclusive
// one waits for it; an exclusive waiter whose context ends leaves the
// queue at once, and the shared ones behind it have the lock then.
func TestGateLock_ArrivalOrderAndCancelledWaiters(t *testing.T) {
	var l gateLock
	bg := context.Background()
	require.NoError(t, l.lock(bg, true, nil), "a free lock is had at once")

	xctx, cancel := context.WithCancel(bg)
	excl := make(chan error, 1)
	go func() { excl <- l.lock(xctx, false, nil) }()
	queued := func(n int) func() bool {
		return func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.queue) == n
		}
	}
	waitFor(t, queued(1), "the exclusive waiter queues")
	shared := make(chan error, 1)
	go func() { shared <- l.lock(bg, true, nil) }()
	waitFor(t, queued(2), "the shared waiter queues behind it")
	assert.False(t, had(shared), "a shared waiter waits for the exclusive one before it")

	cancel()
	assert.ErrorIs(t, <-excl, context.Canceled)
	require.NoError(t, <-shared, "the shared waiter has the lock once the one before it gave up")

	// An exclusive waiter is not starved by shared ones that come after.
	excl2 := make(chan error, 1)
	go func() { excl2 <- l.lock(bg, false, nil) }()
	waitFor(t, queued(1), "the exclusive waiter queues")
	late := make(chan error, 1)
	go func() { late <- l.lock(bg, true, nil) }()
	waitFor(t, queued(2), "the late shared waiter queues")
	l.unlock(true)
	l.unlock(true)
	require.NoError(t, <-excl2, "the exclusive waiter has it once the holders are gone")
	assert.False(t, had(late), "the late shared waiter waits for it")
	l.unlock(false)
	require.NoError(t, <-late)
	l.unlock(true)

	// A done context does not stop a lock that is free.
	require.NoError(t, l.lock(xctx, false, nil), "a free lock is had even with ctx ended")
	l.unlock(false)
}

// TestGateLock_CancelledWaiterLeavesNothingBehind: a waiter that leaves
// the middle of the queue is not kept reachable from the queue's backing
// array (a gateWait with its channel per cancelled deletion, held until
// the slice grows again).
func TestGateLock_CancelledWaiterLeavesNothingBehind(t *testing.T) {
	var l gateLock
	bg := context.Background()
	require.NoError(t, l.lock(bg, false, nil))
	ctxs := make([]context.CancelFunc, 3)
	done := make([]chan error, 3)
	for i := range ctxs {
		ctx, cancel := context.WithCancel(bg)
		ctxs[i], done[i] = cancel, make(chan error, 1)
		go func() { done[i] <- l.lock(ctx, false, nil) }()
		waitFor(t, func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			return len(l.queue) == i+1
		}, "a waiter queues")
	}
	ctxs[1]() // the middle one gives up
	require.ErrorIs(t, <-done[1], context.Canceled)
	l.mu.Lock()
	full := l.queue[:cap(l.queue)]
	n := len(l.queue)
	for i := n; i < len(full); i++ {
		assert.Nil(t, full[i], "slot %d beyond the queue's length still holds a waiter", i)
	}
	l.mu.Unlock()
	assert.Equal(t, 2, n)
	ctxs[0]()
	ctxs[2]()
	require.ErrorIs(t, <-done[0], context.Canceled)
	require.ErrorIs(t, <-done[2], context.Canceled)
	l.unlock(false)
}
