package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// staleBroker owns a fast path (an AppendAsync of its own) that answers
// every append as one on a stale route (ErrQueueNotWritable), at once on
// the caller's goroutine as the engine does for a queue closed to
// producers; the producer's retry on a fresh route goes through Append,
// which heldBroker holds until released and counts.
type staleBroker struct {
	*heldBroker
	stale atomic.Int64
}

func (b *staleBroker) FastPathOwner() any { return b }

func (b *staleBroker) AppendAsync(_ context.Context, _ *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	b.stale.Add(1)
	cb(equeue.AppendResult{}, fmt.Errorf("%w: the route changed", equeue.ErrQueueNotWritable))
}

// A burst of SendAsync calls whose appends fail on a stale route (a topic
// whose queues changed under the producer's cached route) is retried on
// a fresh route by at most the producer's window of goroutines; the
// others wait in a queue, and the broker's answer never blocks (each
// SendAsync returns while every retry is held). Every future completes
// with the retry's outcome, each message stored once. Before, each
// failure started a goroutine of its own, without a bound.
func TestProducer_StaleRouteRetriesAreBoundedByTheWindow(t *testing.T) {
	const window, n = 4, 64
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &staleBroker{heldBroker: newHeldBroker(e)}
	p := newProducer(t, b, &equeue.ProducerOptions{AsyncWindow: window})
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
	}()

	futures := make([]*equeue.SendFuture, n)
	for i := range futures {
		futures[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	require.Equal(t, int64(n), b.stale.Load(), "every first attempt met a stale route")
	eventually(t, time.Minute, func() bool {
		return b.started.Load() > window || (b.started.Load() == window && equeue.RouteRetriesWaiting(p) == n-window)
	}, "the retries fill the window and the rest wait (%v started)", func() any { return b.started.Load() })
	require.Equal(t, int64(window), b.started.Load(), "retries running while the first ones are held")

	close(b.release)
	released = true
	checkStoredOnce(t, ctx, e, futures)
	require.Equal(t, int64(n), b.started.Load(), "one retry per send")
	require.LessOrEqual(t, b.most.Load(), int64(window), "retries running at once")
	require.Equal(t, 0, equeue.RouteRetriesWaiting(p))
}
