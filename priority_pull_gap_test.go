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

// sendOnEmptyPull is an engine Observer that, once armed, runs send from
// inside the first pull of topic p's queue ID queue that found nothing,
// before that pull's answer reaches its caller: a message stored right
// after a check read the queue and found it empty.
type sendOnEmptyPull struct {
	queue int
	armed atomic.Bool
	send  func()
	once  sync.Once
	sent  chan struct{}
}

func (o *sendOnEmptyPull) ObservePull(topic string, queue int, _ time.Duration, messages int) {
	if topic == "p" && queue == o.queue && messages == 0 && o.armed.Load() {
		o.once.Do(func() {
			o.send()
			close(o.sent)
		})
	}
}

// TestPriority_PullConsumerFetchDoesNotPassAHigherLaneStoredAfterItsCheck:
// a Fetch of a lower lane checks the higher lanes (empty), and a
// high-priority message is stored right after that check, before the
// Fetch reads its own lane, which holds a backlog and so answers at once
// (the Fetch does not wait). The low message, read after the high one was
// stored, must not be returned before it: the Fetch returns nothing, the
// high lane's Fetch returns the high message, and only then the low
// lane's Fetch returns the low one.
func TestPriority_PullConsumerFetchDoesNotPassAHigherLaneStoredAfterItsCheck(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		obs := &sendOnEmptyPull{queue: 1, sent: make(chan struct{})}
		e, b := openOver(t, tr, "memory", &equeue.Options{Observer: obs})
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
		p := newProducer(t, e, nil)
		obs.send = func() {
			_, err := p.Send(context.Background(), &equeue.Message{Topic: "p", Priority: 1, Body: []byte("high")})
			assert.NoError(t, err)
		}
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 0, Body: []byte("low")})
		require.NoError(t, err)

		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}

		obs.armed.Store(true)
		lo, err := pc.Fetch(ctx, low, 10, 0) // its check of the high lane finds it empty; "high" is stored then
		require.NoError(t, err)
		select {
		case <-obs.sent:
		default:
			t.Fatal("the Fetch of the low lane never checked the high lane")
		}
		require.Empty(t, lo, "the low lane's Fetch returned a message read after a high message was stored")

		hi, err := pc.Fetch(ctx, high, 10, 0)
		require.NoError(t, err)
		require.Len(t, hi, 1)
		assert.Equal(t, "high", string(hi[0].Body))
		assert.Equal(t, 1, hi[0].Priority)

		lo, err = pc.Fetch(ctx, low, 10, 0)
		require.NoError(t, err)
		require.Len(t, lo, 1, "the low lane's turn came once the high lane was fetched")
		assert.Equal(t, "low", string(lo[0].Body))
		assert.Equal(t, 0, lo[0].Priority)
		pos, ok := pc.Position(low)
		require.True(t, ok)
		assert.Equal(t, int64(1), pos)
	})
}
