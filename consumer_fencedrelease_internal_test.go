package equeue

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fencedStartRig is an orderly consumer of a one-queue topic holding 20
// messages, whose handler blocks on the first until release is closed, so
// that its runner caches them all; its membership loop is stopped, for
// the test to apply assignments itself.
type fencedStartRig struct {
	c        *Consumer
	ref      QueueRef
	grant    Grant // the queue's grant, as the group gave it
	version  int64 // of the assignment applied at the start
	release  func()
	running  atomic.Int64
	most     atomic.Int64
	returned atomic.Int64
}

func newFencedStartRig(t *testing.T, ctx context.Context) *fencedStartRig {
	t.Helper()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	batch := make([]*Message, 20)
	for i := range batch {
		batch[i] = &Message{Body: []byte("x")}
	}
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: batch})
	require.NoError(t, err)
	g := &fencedStartRig{ref: QueueRef{Topic: "t", Queue: 0}}
	release := make(chan struct{})
	var once sync.Once
	g.release = func() { once.Do(func() { close(release) }) }
	started := make(chan struct{}, 1)
	g.c, err = NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond, CommitInterval: time.Hour, HandoffTimeout: time.Minute,
		Handler: func(context.Context, *Message) error {
			n := g.running.Add(1)
			defer g.running.Add(-1)
			for o := g.most.Load(); n > o && !g.most.CompareAndSwap(o, n); o = g.most.Load() {
			}
			defer g.returned.Add(1)
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, g.c.Start(ctx))
	t.Cleanup(func() { g.release(); _ = g.c.Close() })
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the handler did not start")
	}
	g.c.loopCancel()
	waitFor(t, func() bool { return !stackHas("equeue.(*Consumer).membershipLoop(") }, "the membership loop stops")
	// No heartbeat confirms the membership any more: without this, the
	// gate's lease (two heartbeat intervals) ran out on a slow machine
	// and held the queue's next runner before its first message.
	g.c.gate.mu.Lock()
	g.c.gate.lease, g.c.gate.failed = 0, false
	g.c.gate.mu.Unlock()
	r := g.runner()
	require.NotNil(t, r)
	g.grant = r.grant
	g.c.mu.Lock()
	g.version = g.c.version
	g.c.mu.Unlock()
	waitFor(t, func() bool {
		r.pq.mu.Lock()
		defer r.pq.mu.Unlock()
		return r.pq.count == len(batch)
	}, "the runner caches the queue's messages")
	return g
}

// runner is the queue's runner, nil when none runs it.
func (g *fencedStartRig) runner() *runner {
	g.c.mu.Lock()
	defer g.c.mu.Unlock()
	return g.c.runners[g.ref]
}

// fenceWithFailedStart applies a grant of the queue under an epoch the
// group never gave, as a re-grant the member sees late: the runner is
// fenced, and starting the new grant fails (fetching its offsets is
// refused), so no runner takes the fenced one's place.
func (g *fencedStartRig) fenceWithFailedStart(t *testing.T, ctx context.Context) {
	t.Helper()
	err := g.c.apply(ctx, Assignment{Version: g.version + 1, Queues: []Grant{{QueueRef: g.ref, Epoch: g.grant.Epoch + 1}}})
	require.Error(t, err, "the new grant's offsets cannot be fetched")
	require.Nil(t, g.runner(), "no runner started")
	g.c.mu.Lock()
	_, kept := g.c.fenced[g.ref]
	g.c.mu.Unlock()
	require.True(t, kept, "the fenced runner is kept for the queue's next runner to wait for")
}

// TestConsumer_FencedRunnerGoesWithItsQueue: an orderly runner fenced by a
// re-grant of its queue whose start failed is kept, so that the queue's
// next runner waits for its handler. When the member's next assignment no
// longer holds the queue and that handler has returned, nothing keeps the
// runner, nor the messages it cached: they stayed until Close.
func TestConsumer_FencedRunnerGoesWithItsQueue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newFencedStartRig(t, ctx)
	gone := weak.Make(g.runner())
	g.fenceWithFailedStart(t, ctx)
	g.release()
	waitFor(t, func() bool { return g.returned.Load() == 1 }, "the fenced handler returns")

	require.NoError(t, g.c.apply(ctx, Assignment{Version: g.version + 2}), "an assignment without the queue")
	g.c.mu.Lock()
	_, kept := g.c.fenced[g.ref]
	g.c.mu.Unlock()
	assert.False(t, kept, "the queue is no longer granted: its fenced runner is not kept")
	waitFor(t, func() bool {
		runtime.GC()
		return gone.Value() == nil
	}, "nothing keeps the fenced runner and the messages it cached")
}

// TestConsumer_FencedHandlerWaitedForWhenItsQueueComesBack: a fenced
// orderly runner whose handler still runs when the member's assignment
// drops its queue is still waited for when the queue is granted back: the
// queue never has two handlers at once in the member.
func TestConsumer_FencedHandlerWaitedForWhenItsQueueComesBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := newFencedStartRig(t, ctx)
	g.fenceWithFailedStart(t, ctx)
	require.NoError(t, g.c.apply(ctx, Assignment{Version: g.version + 2}), "an assignment without the queue")

	// Granted back under the group's grant: a runner starts and waits.
	require.NoError(t, g.c.apply(ctx, Assignment{Version: g.version + 3, Queues: []Grant{g.grant}}))
	require.NotNil(t, g.runner())
	waitFor(t, func() bool { return waitingForFenced() == 1 }, "the new runner waits for the fenced handler")
	g.release()
	waitFor(t, func() bool { return g.returned.Load() == 21 }, "the new runner handles the queue")
	assert.Equal(t, int64(1), g.most.Load(), "one handler of the queue at a time")
}
