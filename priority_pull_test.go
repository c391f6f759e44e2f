package equeue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPriority_PullConsumerBacklogHigherFirst: a PullConsumer that fetches
// its lanes lowest first, in a plain loop, still gets a backlog highest
// priority first, each lane in its order, and nothing twice.
func TestPriority_PullConsumerBacklogHigherFirst(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
		const n = 30
		sendPriorities(t, b, "p", n, []int{0, 1, 2}, "m") // the lowest first
		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		refs := pc.Assigned()
		require.Len(t, refs, 3, "the consumer owns the queue's three lanes")
		var prios []int
		var bodies []string
		deadline := time.Now().Add(30 * time.Second)
		for len(prios) < 3*n && time.Now().Before(deadline) {
			for _, ref := range refs { // lane 0 first: the worst order
				msgs, err := pc.Fetch(ctx, ref, 7, 0)
				require.NoError(t, err)
				for _, m := range msgs {
					assert.Equal(t, ref.Queue, m.Queue, "a lane's fetch returns that lane's messages")
					prios = append(prios, m.Priority)
					bodies = append(bodies, string(m.Body))
				}
			}
		}
		require.Len(t, prios, 3*n)
		want := slices.Clone(prios)
		slices.SortStableFunc(want, func(a, b int) int { return b - a })
		assert.Equal(t, want, prios, "higher priorities first")
		for pr := range 3 {
			var got, exp []string
			for i, p := range prios {
				if p == pr {
					got = append(got, bodies[i])
				}
			}
			for i := range n {
				exp = append(exp, fmt.Sprintf("m-p%d-%d", pr, i))
			}
			assert.Equal(t, exp, got, "lane %d in send order, once each", pr)
		}
		for _, ref := range refs {
			pos, ok := pc.Position(ref)
			require.True(t, ok)
			assert.Equal(t, int64(n), pos, "lane %d fetched to its end", ref.Queue)
		}
	})
}

// TestPriority_PullConsumerGatedFetchWaits: a Fetch of a lower lane with a
// wait returns the lower lane's messages once another goroutine fetched the
// higher lane empty, without waiting out its wait.
func TestPriority_PullConsumerGatedFetchWaits(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
		sendPriorities(t, b, "p", 5, []int{0, 1}, "m")
		pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctx))
		t.Cleanup(func() { assert.NoError(t, pc.Close()) })
		low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}
		msgs, err := pc.Fetch(ctx, low, 10, 0)
		require.NoError(t, err)
		assert.Empty(t, msgs, "the low lane looks empty while the high lane has a backlog")

		var wg sync.WaitGroup
		var got []*equeue.Message
		var gerr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, gerr = pc.Fetch(ctx, low, 10, time.Hour) // woken by the high lane's fetch, not by the hour
		}()
		high5, err := pc.Fetch(ctx, high, 10, 0)
		require.NoError(t, err)
		assert.Len(t, high5, 5)
		wg.Wait()
		require.NoError(t, gerr)
		assert.Len(t, got, 5, "the low lane's turn came once the high lane was fetched")
	})
}

// holdPullBroker holds the first Pull of one queue, once it has read,
// until released.
type holdPullBroker struct {
	equeue.Broker
	queue            int
	held             atomic.Bool
	entered, release chan struct{}
}

func (b *holdPullBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := b.Broker.Pull(ctx, req)
	if req.Queue == b.queue && b.held.CompareAndSwap(false, true) {
		close(b.entered)
		<-b.release
	}
	return res, err
}

// A Fetch of the high lane and the gate check of a Fetch of the low lane
// read the high lane from the same position at once: the gate keeps what
// it read for the high lane's next Fetch, but the high lane's own Fetch
// returned those messages already. Its next Fetch must not return them
// again (the gate reads ahead so that nothing is read twice).
func TestPriority_PullConsumerGateReadRacingAFetchIsNotDeliveredTwice(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	p := newProducer(t, e, nil)
	for i := range 3 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 1, Body: fmt.Appendf(nil, "high-%d", i)})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 0, Body: []byte("low")})
	require.NoError(t, err)
	b := &holdPullBroker{Broker: e, queue: 1, entered: make(chan struct{}), release: make(chan struct{})}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	high, low := equeue.QueueRef{Topic: "p", Queue: 1}, equeue.QueueRef{Topic: "p", Queue: 0}

	type fetched struct {
		msgs []*equeue.Message
		err  error
	}
	first := make(chan fetched, 1)
	go func() {
		msgs, err := pc.Fetch(ctx, high, 10, 0)
		first <- fetched{msgs, err}
	}()
	<-b.entered // the high lane's Fetch has read its messages
	msgs, err := pc.Fetch(ctx, low, 10, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs, "the high lane has messages past the position")
	close(b.release)
	f := <-first
	require.NoError(t, f.err)
	require.Len(t, f.msgs, 3)

	msgs, err = pc.Fetch(ctx, high, 10, 0)
	require.NoError(t, err)
	assert.Empty(t, msgs, "the high lane's messages were fetched once")
	pos, ok := pc.Position(high)
	require.True(t, ok)
	assert.Equal(t, int64(3), pos)
	msgs, err = pc.Fetch(ctx, low, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1, "the low lane's turn")
	assert.Equal(t, "low", string(msgs[0].Body))
}
