package equeue_test

import (
	"fmt"
	"slices"
	"sync"
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
