package equeue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// laneWatchBroker reports when the long-poll of queue ID low starts, and
// then the first pull of queue ID high once that long-poll has returned.
type laneWatchBroker struct {
	equeue.Broker
	low, high        int
	waiting, checked chan struct{}
	polled, seen     atomic.Bool
	once             sync.Once
}

func (b *laneWatchBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if req.Queue == b.low && req.Wait > 0 {
		b.once.Do(func() { close(b.waiting) })
		res, err := b.Broker.Pull(ctx, req)
		b.polled.Store(true)
		return res, err
	}
	if req.Queue == b.high && b.polled.Load() && b.seen.CompareAndSwap(false, true) {
		close(b.checked)
	}
	return b.Broker.Pull(ctx, req)
}

// TestPriority_PullConsumerLongPollDoesNotPassAHigherLane: a Fetch of a
// lower lane that passed the gate and then long-polls its lane must not
// return what its wait brought while a higher lane of the queue received
// a message first: that Fetch returns its lane's messages only once the
// higher lane was fetched.
func TestPriority_PullConsumerLongPollDoesNotPassAHigherLane(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, inner := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
		b := &laneWatchBroker{Broker: inner, low: 0, high: 1, waiting: make(chan struct{}), checked: make(chan struct{})}
		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}

		type fetched struct {
			msgs []*equeue.Message
			err  error
		}
		got := make(chan fetched, 1)
		go func() {
			msgs, err := pc.Fetch(ctx, low, 10, time.Hour) // passes the gate: both lanes are empty
			got <- fetched{msgs, err}
		}()
		<-b.waiting // the low lane's long-poll runs (or is about to)

		p := newProducer(t, inner, nil)
		_, err = p.Send(ctx, &equeue.Message{Topic: "p", Priority: 1, Body: []byte("high")})
		require.NoError(t, err)
		_, err = p.Send(ctx, &equeue.Message{Topic: "p", Priority: 0, Body: []byte("low")})
		require.NoError(t, err)

		select {
		case f := <-got:
			require.NoError(t, f.err)
			t.Fatalf("the low lane's Fetch returned %d message(s) while the high lane held one sent before", len(f.msgs))
		case <-b.checked: // the low lane's Fetch looked at the high lane again
		}
		hi, err := pc.Fetch(ctx, high, 10, 0)
		require.NoError(t, err)
		require.Len(t, hi, 1)
		assert.Equal(t, "high", string(hi[0].Body))
		f := <-got
		require.NoError(t, f.err)
		require.Len(t, f.msgs, 1, "the low lane's turn came once the high lane was fetched")
		assert.Equal(t, "low", string(f.msgs[0].Body))
		assert.Equal(t, 0, f.msgs[0].Priority)
		pos, ok := pc.Position(low)
		require.True(t, ok)
		assert.Equal(t, int64(1), pos)
	})
}
