package equeue

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitingForFenced counts the goroutines of runners waiting for a fenced
// runner of their queue (runner.waitPrev).
func waitingForFenced() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "equeue.(*runner).waitPrev(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// orderlyRig is an orderly consumer of a one-queue topic holding one
// message, whose handler blocks until release is closed and records how
// many of its runs overlap at most.
type orderlyRig struct {
	e                    *Engine
	c                    *Consumer
	started, release     chan struct{}
	running, most, calls atomic.Int64
}

// startNext starts another orderly member, id, of the rig's group, whose
// handler counts into running and most as the first member's does;
// started reports that it began a message. The caller closes it.
func (g *orderlyRig) startNext(t *testing.T, ctx context.Context, id string) (*Consumer, *atomic.Bool) {
	t.Helper()
	started := new(atomic.Bool)
	b, err := NewConsumer(g.e, ConsumerOptions{Group: "g", ID: id, Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(ctx context.Context, m *Message) error {
			n := g.running.Add(1)
			defer g.running.Add(-1)
			for o := g.most.Load(); n > o && !g.most.CompareAndSwap(o, n); o = g.most.Load() {
			}
			started.Store(true)
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	return b, started
}

func newOrderlyRig(t *testing.T, ctx context.Context) *orderlyRig {
	t.Helper()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	g := &orderlyRig{e: e, started: make(chan struct{}, 4), release: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-g.release:
		default:
			close(g.release)
		}
	})
	g.c, err = NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond, HandoffTimeout: time.Minute,
		Handler: func(ctx context.Context, m *Message) error {
			n := g.running.Add(1)
			defer g.running.Add(-1)
			for o := g.most.Load(); n > o && !g.most.CompareAndSwap(o, n); o = g.most.Load() {
			}
			g.calls.Add(1)
			g.started <- struct{}{}
			<-g.release
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, g.c.Start(ctx))
	<-g.started
	return g
}

// newRunner returns the runner of the queue under an epoch not in seen.
func (g *orderlyRig) newRunner(seen map[int64]bool) *runner {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	for _, r := range g.c.runners {
		if !seen[r.grant.Epoch] {
			return r
		}
	}
	return nil
}

// TestConsumer_OrderlyResetRunsOneHandlerAtATime: an offset reset fences
// the orderly runner and starts the queue again; the fenced runner's
// handler still running must not overlap one of the new runner.
func TestConsumer_OrderlyResetRunsOneHandlerAtATime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newOrderlyRig(t, ctx)
	seen := map[int64]bool{g.c.Queues()[0].Epoch: true}
	require.NoError(t, g.e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return g.newRunner(seen) != nil }, "the member runs the queue under its new grant")
	// The new runner starts from the reset offset: it pulls the message the
	// old handler still runs, and must not begin it before that returns.
	time.Sleep(50 * time.Millisecond) // a second handler of the queue would start here
	close(g.release)
	waitFor(t, func() bool { return g.calls.Load() == 2 }, "the new runner handles the message again")
	require.NoError(t, g.c.Close())
	assert.Equal(t, int64(1), g.most.Load(), "one handler of the queue at a time")
}

// TestConsumer_OrderlyTwoResetsRunOneHandlerAtATime: a second offset reset
// fences the runner that still waits for the first fenced runner's
// handler; the queue's next runner must still not begin a message while
// that handler runs.
func TestConsumer_OrderlyTwoResetsRunOneHandlerAtATime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newOrderlyRig(t, ctx)
	seen := map[int64]bool{g.c.Queues()[0].Epoch: true}
	// First reset: the new runner waits for the fenced one's handler.
	require.NoError(t, g.e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return g.newRunner(seen) != nil }, "the queue runs under the first reset's grant")
	waiting := g.newRunner(seen)
	seen[waiting.grant.Epoch] = true
	waitFor(t, func() bool { return waitingForFenced() == 1 }, "the new runner waits for the fenced handler")
	// Second reset: that waiting runner is fenced in turn.
	require.NoError(t, g.e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return g.newRunner(seen) != nil }, "the queue runs under the second reset's grant")
	// Either the newest runner waits (for the first handler, or for the
	// runner it replaced), or a second handler began.
	waitFor(t, func() bool {
		select {
		case <-waiting.done:
		default:
			return g.calls.Load() > 1 || waitingForFenced() == 2
		}
		return g.calls.Load() > 1 || waitingForFenced() == 1
	}, "the newest runner waits or handles")
	assert.Equal(t, int64(1), g.most.Load(), "no handler began while the first one runs")
	close(g.release)
	waitFor(t, func() bool { return g.calls.Load() >= 2 }, "the newest runner handles the message again")
	require.NoError(t, g.c.Close())
	assert.Equal(t, int64(1), g.most.Load(), "one handler of the queue at a time")
}

// TestConsumer_OrderlyCloseAfterResetWaitsForTheFencedHandler: a Close
// that comes while the runner after an offset reset still waits for the
// fenced runner's handler waits for that handler too before it leaves:
// the member that gets the queue next must not begin a message while it
// runs.
func TestConsumer_OrderlyCloseAfterResetWaitsForTheFencedHandler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newOrderlyRig(t, ctx)
	seen := map[int64]bool{g.c.Queues()[0].Epoch: true}
	require.NoError(t, g.e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return g.newRunner(seen) != nil }, "the member runs the queue under its new grant")
	waitFor(t, func() bool { return waitingForFenced() == 1 }, "the new runner waits for the fenced handler")

	closed := make(chan error, 1)
	go func() { closed <- g.c.Close() }()
	b, bStarted := g.startNext(t, ctx, "b")
	defer func() { require.NoError(t, b.Close()) }()
	waitFor(t, func() bool {
		return bStarted.Load() || stackHas("equeue.(*runner).waitFencedStop(")
	}, "Close waits for the fenced handler, or the next member handles the queue")
	assert.False(t, bStarted.Load(), "the next member began a message while the fenced handler runs")
	close(g.release)
	require.NoError(t, <-closed)
	waitFor(t, func() bool { return bStarted.Load() }, "the next member handles the queue once a left")
	assert.Equal(t, int64(1), g.most.Load(), "one handler of the queue at a time")
}

// stackHas reports whether a goroutine's stack holds frame.
func stackHas(frame string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Contains(string(buf[:n]), frame)
		}
		buf = make([]byte, 2*len(buf))
	}
}
