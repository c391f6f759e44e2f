package equeue_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
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
	const window = 4
	const n = 2 * window // as many as run and wait: none blocks
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

// sendersWaitingForRetryRoom counts the SendAsync calls parked while
// their producer's queue of stale-route retries is full.
func sendersWaitingForRetryRoom() int {
	buf := make([]byte, 1<<24)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		parked := strings.Contains(header, "[select") || strings.Contains(header, "[chan receive")
		if parked && strings.Contains(g, "equeue.(*Producer).waitRetryRoom(") && strings.Contains(g, "equeue.(*Producer).SendAsync(") {
			n++
		}
	}
	return n
}

// The queue of SendAsync calls waiting to be retried on a fresh route is
// bounded: once the producer's window of them wait, SendAsync waits for
// room, as backpressure, before it appends, and every send is then
// retried and stored once. Before, the queue grew by one per send while
// the retries were held: nothing bounded it, the broker's queue having
// room again as soon as it answered.
func TestProducer_StaleRouteRetryQueueIsBounded(t *testing.T) {
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

	fed := make(chan []*equeue.SendFuture, 1)
	go func() {
		fs := make([]*equeue.SendFuture, n)
		for i := range fs {
			fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		}
		fed <- fs
	}()
	eventually(t, time.Minute, func() bool {
		return equeue.RouteRetriesWaiting(p) > window || len(fed) > 0 ||
			(b.started.Load() == window && sendersWaitingForRetryRoom() == 1)
	}, "the retries fill the window and a send waits for room")
	require.LessOrEqual(t, equeue.RouteRetriesWaiting(p), window, "retries waiting")
	require.Empty(t, fed, "SendAsync returned with the retry queue full")
	require.Equal(t, int64(2*window), b.stale.Load(), "the waiting send has not appended")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("gave up")}).Result(ctx)
	require.ErrorIs(t, err, context.Canceled, "a send whose ctx ends while it waits for room")
	require.Equal(t, int64(2*window), b.stale.Load(), "the send whose ctx ended was not sent")

	close(b.release)
	released = true
	futures := waitOrDeadlock(t, fed, "SendAsync never got room")
	checkStoredOnce(t, ctx, e, futures)
	require.Equal(t, int64(n), b.started.Load(), "one retry per send")
}

// callbackStaleBroker is a staleBroker whose every goroutine counts as
// one running its callbacks (equeue.CallbackRunner), as a remote
// client's stream reader does inside an AppendAsync callback.
type callbackStaleBroker struct {
	*staleBroker
	inCallback atomic.Bool
}

func (b *callbackStaleBroker) RunsCallback() bool { return b.inCallback.Load() }

func (b *callbackStaleBroker) FastPathOwner() any { return b }

// A SendAsync called from a goroutine running the broker's callbacks
// while the queue of stale-route retries is full does not wait for room
// (the held retries may wait for answers that goroutine reads): its
// future fails at once with ErrWindowFull and nothing is sent. Before,
// it waited for room until its ctx ended.
func TestProducer_StaleRouteRetryQueueFullFromACallbackFailsAtOnce(t *testing.T) {
	const window = 2
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &callbackStaleBroker{staleBroker: &staleBroker{heldBroker: newHeldBroker(e)}}
	p := newProducer(t, b, &equeue.ProducerOptions{AsyncWindow: window})
	released := false
	defer func() {
		if !released {
			close(b.release)
		}
	}()
	futures := make([]*equeue.SendFuture, 2*window)
	for i := range futures {
		futures[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	eventually(t, time.Minute, func() bool {
		return b.started.Load() == window && equeue.RouteRetriesWaiting(p) == window
	}, "the retries fill the window and the queue")

	b.inCallback.Store(true)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	f := p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("from a callback")})
	_, err := f.Result(ctx)
	require.ErrorIs(t, err, equeue.ErrWindowFull, "a callback's send on a full retry queue")
	require.NoError(t, cctx.Err(), "it failed at once, not when its ctx ended")
	require.Equal(t, int64(2*window), b.stale.Load(), "the callback's send was not sent")
	b.inCallback.Store(false)

	close(b.release)
	released = true
	checkStoredOnce(t, ctx, e, futures)
}
