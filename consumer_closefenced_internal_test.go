package equeue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fencedRig is a consumer of a one-queue topic holding one message, whose
// handler blocks, ignoring its context, until release is closed. fence
// abandons its runners as the membership loop does when the member was
// fenced, with the loop stopped: the queue gets no new runner.
type fencedRig struct {
	e         *Engine
	c         *Consumer
	release   chan struct{}
	releaseMu sync.Once
	returned  atomic.Int64 // handler calls returned
}

func newFencedRig(t *testing.T, ctx context.Context, orderly bool, shutdown time.Duration) *fencedRig {
	t.Helper()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	g := &fencedRig{e: e, release: make(chan struct{})}
	started := make(chan struct{}, 1)
	g.c, err = NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: orderly, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond, CommitInterval: time.Hour, ShutdownTimeout: shutdown,
		Handler: func(context.Context, *Message) error {
			defer g.returned.Add(1)
			select {
			case started <- struct{}{}:
			default:
			}
			<-g.release // ignores its context
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, g.c.Start(ctx))
	t.Cleanup(func() { g.unblock(); _ = g.c.Close() })
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the handler did not start")
	}
	return g
}

// fence stops the membership loop, then abandons every runner (see
// Consumer.abandonAll).
func (g *fencedRig) fence(t *testing.T) {
	t.Helper()
	g.c.loopCancel()
	waitFor(t, func() bool { return !stackHas("equeue.(*Consumer).membershipLoop(") }, "the membership loop stops")
	g.c.abandonAll()
}

// unblock lets the handler return.
func (g *fencedRig) unblock() { g.releaseMu.Do(func() { close(g.release) }) }

// committed is the group's committed offset of the queue.
func (g *fencedRig) committed(t *testing.T) int64 {
	gi, err := g.e.Group(context.Background(), "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" && q.Queue == 0 {
			return q.Committed
		}
	}
	return -1
}

// TestConsumer_CloseAfterAFenceGivesUpOnTheFencedHandler: the member was
// fenced (its runners abandoned) while a handler that ignores its context
// runs, and Close comes before the queue runs again. Close waits for that
// handler as long as for a drained one, then returns without it: nothing
// is committed for it, and its goroutine, the only one of the consumer
// left, ends when the handler returns.
func TestConsumer_CloseAfterAFenceGivesUpOnTheFencedHandler(t *testing.T) {
	for name, orderly := range map[string]bool{"concurrent": false, "orderly": true} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g := newFencedRig(t, ctx, orderly, 20*time.Millisecond)
			before := g.committed(t)
			g.fence(t)
			closed := make(chan error, 1)
			go func() { closed <- g.c.Close() }()
			select {
			case err := <-closed:
				require.ErrorIs(t, err, ErrHandlerAbandoned, "Close reports the fenced handler it gave up on")
			case <-time.After(10 * time.Second): // both waits are 20 ms: it hangs
				g.unblock()
				t.Fatalf("Close waits for a fenced handler that ignores its context (Close: %v)", <-closed)
			}
			g.c.live.mu.Lock()
			left := g.c.live.running
			g.c.live.mu.Unlock()
			assert.Equal(t, 1, left, "only the fenced handler's goroutine outlives Close")
			assert.Equal(t, int64(0), g.returned.Load(), "the handler still runs")
			g.unblock()
			waitFor(t, func() bool {
				g.c.live.mu.Lock()
				defer g.c.live.mu.Unlock()
				return g.c.live.running == 0
			}, "the handler's goroutine ends when it returns")
			assert.Equal(t, before, g.committed(t), "nothing is committed for the fenced handler")
		})
	}
}

// TestConsumer_CloseAfterAFenceWaitsForTheFencedHandler: within its waits,
// Close waits for the handler of a runner fenced before it, as for a
// drained one: it does not return while that handler runs.
func TestConsumer_CloseAfterAFenceWaitsForTheFencedHandler(t *testing.T) {
	for name, orderly := range map[string]bool{"concurrent": false, "orderly": true} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g := newFencedRig(t, ctx, orderly, time.Minute)
			g.fence(t)
			closed := make(chan error, 1)
			go func() { closed <- g.c.Close() }()
			waitFor(t, func() bool { return stackHas("equeue.(*liveCount).waitFenced(") }, "Close waits for the fenced handler")
			select {
			case err := <-closed:
				t.Fatalf("Close returned while the fenced handler runs (Close: %v)", err)
			default:
			}
			g.unblock()
			require.NoError(t, <-closed)
			assert.Equal(t, int64(1), g.returned.Load(), "the handler returned before Close")
		})
	}
}
