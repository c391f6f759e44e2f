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

// pairedLowPulls is an engine Observer that holds the first two pulls of
// topic p's queue ID 0 that found messages, inside the engine, until both
// have read: the first, once the second read, runs send (a message stored
// in a higher lane) and answers; the second answers once release is
// closed. So two Fetches of the lane read from the same position, and the
// second's answer reaches the consumer after the first Fetch returned.
type pairedLowPulls struct {
	send    func()
	arrived atomic.Int32
	second  chan struct{} // closed when the second pull read
	release chan struct{} // closed by the test: the second may answer
	once    sync.Once
}

func (o *pairedLowPulls) ObservePull(topic string, queue int, _ time.Duration, messages int) {
	if topic != "p" || queue != 0 || messages == 0 {
		return
	}
	switch o.arrived.Add(1) {
	case 1:
		select {
		case <-o.second:
			o.send()
		case <-time.After(20 * time.Second): // a Fetch that reads once: nothing to pair
		}
	case 2:
		o.once.Do(func() { close(o.second) })
		select {
		case <-o.release:
		case <-time.After(20 * time.Second):
		}
	}
}

// TestPriority_PullConsumerConcurrentFetchesOfALaneReturnAMessageOnce:
// two Fetches of a lower lane (without a wait) read it from the same
// position, where the filter rejects the first record, so the messages
// they read start past that position. A high message is stored before the
// first one's check of the higher lanes: it keeps its messages for the
// lane's next Fetch and returns nothing. The second, answered after that,
// must not return those same messages too: each message is returned by
// one Fetch only (pullconsumer.go's promise for Fetches of one queue).
func TestPriority_PullConsumerConcurrentFetchesOfALaneReturnAMessageOnce(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		obs := &pairedLowPulls{second: make(chan struct{}), release: make(chan struct{})}
		e, b := openOver(t, tr, "memory", &equeue.Options{Observer: obs})
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
		p := newProducer(t, e, nil)
		obs.send = func() {
			_, err := p.Send(context.Background(), &equeue.Message{Topic: "p", Priority: 1, Tag: "a", Body: []byte("high")})
			assert.NoError(t, err)
		}
		for _, tag := range []string{"x", "a"} { // offset 0 rejected, offset 1 taken
			_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 0, Tag: tag, Body: []byte("low-" + tag)})
			require.NoError(t, err)
		}

		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p", Filter: "a"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}

		got := make(chan []*equeue.Message, 2)
		for range 2 {
			go func() {
				msgs, err := pc.Fetch(ctx, low, 10, 0)
				assert.NoError(t, err)
				got <- msgs
			}()
		}
		var lows []string
		first := <-got
		close(obs.release)
		second := <-got
		for _, m := range append(first, second...) {
			lows = append(lows, string(m.Body))
		}

		hi, err := pc.Fetch(ctx, high, 10, 0)
		require.NoError(t, err)
		require.Len(t, hi, 1)
		assert.Equal(t, "high", string(hi[0].Body))

		rest, err := pc.Fetch(ctx, low, 10, 0)
		require.NoError(t, err)
		for _, m := range rest {
			lows = append(lows, string(m.Body))
		}
		assert.Equal(t, []string{"low-a"}, lows, "the low message was returned by one Fetch only")
		pos, ok := pc.Position(low)
		require.True(t, ok)
		assert.Equal(t, int64(2), pos)
	})
}
