package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// deadLetterPriority sends one message of priority prio to topic p (which
// has priorities), has group g dead-letter it, and closes g's consumer.
func deadLetterPriority(t *testing.T, e *equeue.Engine, prio int) {
	t.Helper()
	ctx := ctxT(t)
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }})
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "p", Priority: prio, Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool {
		dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		require.NoError(t, err)
		return len(dls) == 1
	}, "the message is dead-lettered")
	require.NoError(t, c.Close())
}

// landedIn returns the queue IDs of topic p (of n queue IDs) that hold a
// message, and how many each holds.
func landedIn(t *testing.T, e *equeue.Engine, n int) map[int]int {
	t.Helper()
	out := map[int]int{}
	for q := range n {
		res, err := e.Pull(ctxT(t), &equeue.PullRequest{Topic: "p", Queue: q, Max: 10})
		require.NoError(t, err)
		if len(res.Messages) > 0 {
			out[q] = len(res.Messages)
		}
	}
	return out
}

// TestPriority_RedriveToARemadeTopicKeepsThePriority: a dead letter of a
// topic with priorities, redriven to its topic after the topic was deleted
// and made again with another lane count, goes to the lane of the priority
// it was sent with (clamped to the new lanes), not to the lane its old
// queue ID happens to be in now.
func TestPriority_RedriveToARemadeTopicKeepsThePriority(t *testing.T) {
	for _, tc := range []struct {
		name           string
		queues, lanes  int // of the topic made again
		wantLane, prio int
	}{
		// Sent to lane 2 of queue 0 (queue ID 2); queue ID 2 is now queue 1, lane 0.
		{name: "old queue ID in a lower lane", queues: 2, lanes: 2, prio: 2, wantLane: 1},
		// Queue ID 2 is gone; the key routes it to a queue of lane 1.
		{name: "old queue ID gone", queues: 1, lanes: 2, prio: 2, wantLane: 1},
		// Sent to lane 1 (queue ID 1), which is now queue 0, lane 1 of 4.
		{name: "more lanes", queues: 1, lanes: 4, prio: 1, wantLane: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
			deadLetterPriority(t, e, tc.prio)

			require.NoError(t, e.DeleteTopic(ctx, "p"))
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: tc.queues, Priorities: tc.lanes}))
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)

			got := landedIn(t, e, tc.queues*tc.lanes)
			require.Len(t, got, 1, "one queue ID holds the redriven message: %v", got)
			for q := range got {
				assert.Equal(t, tc.wantLane, q%tc.lanes, "lane of queue ID %d (sent with priority %d)", q, tc.prio)
			}
		})
	}
}

// TestPriority_RetryOfARemadeTopicKeepsThePriority: a dead letter redriven
// to the group's retry topic after its topic was deleted and made again
// with another lane count is handled with the priority it was sent with,
// not the one its old queue ID has among the new lanes.
func TestPriority_RetryOfARemadeTopicKeepsThePriority(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	deadLetterPriority(t, e, 2)

	require.NoError(t, e.DeleteTopic(ctx, "p"))
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 2}))
	var mu sync.Mutex
	var seen []string
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s priority %d", m.Body, m.Priority))
			mu.Unlock()
			return nil
		}})
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	eventually(t, waitLong, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 1 }, "the retry is handled")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"x priority 2"}, seen)
}

// TestPriority_DeadLettersShowTheirPriority: ListDeadLetters shows each
// dead letter of a topic with priorities with the lane its message was
// stored in (DLQEntry.Message.Priority), which its copy records, also over
// the wire and once the topic was deleted and made again without
// priorities.
func TestPriority_DeadLettersShowTheirPriority(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		lister, ok := b.(interface {
			ListDeadLetters(context.Context, string, equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
		})
		require.True(t, ok, "%T lists no dead letters", b)
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
		p := newProducer(t, b, nil)
		for _, prio := range []int{2, 0, 1} {
			_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: prio, Body: fmt.Appendf(nil, "%d", prio)})
			require.NoError(t, err)
		}
		// The body of each dead letter, and the priority it is listed with.
		listed := func() map[string]int {
			dls, err := lister.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			out := map[string]int{}
			for _, dl := range dls {
				out[string(dl.Message.Body)] = dl.Message.Priority
			}
			return out
		}
		c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
			Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }})
		eventually(t, waitLong, func() bool { return len(listed()) == 3 }, "the messages are dead-lettered")
		require.NoError(t, c.Close())
		want := map[string]int{"0": 0, "1": 1, "2": 2}
		assert.Equal(t, want, listed())

		require.NoError(t, e.DeleteTopic(ctx, "p"))
		require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 3}))
		assert.Equal(t, want, listed(), "after the topic was made again without priorities")
	})
}
