package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPriority_PullConsumerConcurrentFetchesOfALaneReturnEachMessageOnce:
// a Fetch of the high lane (A) reads offsets 0-2 and is held; meanwhile
// the gate check of a Fetch of the low lane reads the high lane ahead
// (0-3), and a second Fetch of the high lane (B) takes part of that
// read-ahead (0-1). When A goes on, the position has moved past B's
// messages, and A returns what it read past them (2). What is left of the
// read-ahead (2-3) overlaps A's messages: no message may be returned twice,
// and none may be skipped.
func TestPriority_PullConsumerConcurrentFetchesOfALaneReturnEachMessageOnce(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, inner := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
		p := newProducer(t, inner, nil)
		for i := range 4 {
			_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 1, Body: fmt.Appendf(nil, "high-%d", i)})
			require.NoError(t, err)
		}
		b := &holdPullBroker{Broker: inner, queue: 1, entered: make(chan struct{}), release: make(chan struct{})}
		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		high, low := equeue.QueueRef{Topic: "p", Queue: 1}, equeue.QueueRef{Topic: "p", Queue: 0}

		type fetched struct {
			msgs []*equeue.Message
			err  error
		}
		first := make(chan fetched, 1)
		go func() {
			msgs, err := pc.Fetch(ctx, high, 3, 0) // A
			first <- fetched{msgs, err}
		}()
		<-b.entered // A has read offsets 0-2 of the high lane
		msgs, err := pc.Fetch(ctx, low, 10, 0)
		require.NoError(t, err)
		require.Empty(t, msgs, "the high lane has messages past the position")
		seen := map[int64]int{}
		count := func(msgs []*equeue.Message) {
			for _, m := range msgs {
				seen[m.Offset]++
			}
		}
		msgs, err = pc.Fetch(ctx, high, 2, 0) // B: part of the check's read-ahead
		require.NoError(t, err)
		require.Len(t, msgs, 2)
		count(msgs)
		close(b.release)
		f := <-first
		require.NoError(t, f.err)
		count(f.msgs)

		for range 4 { // what is left, until a Fetch finds nothing
			msgs, err = pc.Fetch(ctx, high, 10, 0)
			require.NoError(t, err)
			if len(msgs) == 0 {
				break
			}
			count(msgs)
		}
		for off := range int64(4) {
			assert.Equal(t, 1, seen[off], "times offset %d of the high lane was returned", off)
		}
		assert.Len(t, seen, 4)
		pos, ok := pc.Position(high)
		require.True(t, ok)
		assert.Equal(t, int64(4), pos)
	})
}
