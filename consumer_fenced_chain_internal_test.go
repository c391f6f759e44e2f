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

// TestConsumer_OrderlyTwoResetsRunOneHandlerAtATime: a second offset reset
// fences the runner that still waits for the first fenced runner's
// handler; the queue's next runner must still not begin a message while
// that handler runs.
func TestConsumer_OrderlyTwoResetsRunOneHandlerAtATime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	var running, most, calls atomic.Int64
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond, HandoffTimeout: time.Minute,
		Handler: func(ctx context.Context, m *Message) error {
			n := running.Add(1)
			defer running.Add(-1)
			for o := most.Load(); n > o && !most.CompareAndSwap(o, n); o = most.Load() {
			}
			calls.Add(1)
			started <- struct{}{}
			<-release
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	<-started
	seen := map[int64]bool{c.Queues()[0].Epoch: true}
	newRunner := func() *runner {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.runners {
			if !seen[r.grant.Epoch] {
				return r
			}
		}
		return nil
	}
	// First reset: the new runner waits for the fenced one's handler.
	require.NoError(t, e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return newRunner() != nil }, "the queue runs under the first reset's grant")
	waiting := newRunner()
	seen[waiting.grant.Epoch] = true
	waitFor(t, func() bool { return waitingForFenced() == 1 }, "the new runner waits for the fenced handler")
	// Second reset: that waiting runner is fenced in turn.
	require.NoError(t, e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	waitFor(t, func() bool { return newRunner() != nil }, "the queue runs under the second reset's grant")
	// Either the newest runner waits (for the first handler, or for the
	// runner it replaced), or a second handler began.
	waitFor(t, func() bool {
		select {
		case <-waiting.done:
		default:
			return calls.Load() > 1 || waitingForFenced() == 2
		}
		return calls.Load() > 1 || waitingForFenced() == 1
	}, "the newest runner waits or handles")
	assert.Equal(t, int64(1), most.Load(), "no handler began while the first one runs")
	close(release)
	waitFor(t, func() bool { return calls.Load() >= 2 }, "the newest runner handles the message again")
	require.NoError(t, c.Close())
	assert.Equal(t, int64(1), most.Load(), "one handler of the queue at a time")
}
