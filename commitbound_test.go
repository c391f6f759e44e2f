package equeue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// appendTo appends n messages to queue q, one at a time.
func appendTo(t testing.TB, e *equeue.Engine, q equeue.QueueRef, n int) {
	t.Helper()
	for i := range n {
		_, err := e.Append(ctxT(t), &equeue.AppendRequest{Topic: q.Topic, Queue: q.Queue, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
		require.NoError(t, err)
	}
}

// A PullConsumer that seeks past a queue's end cannot commit there: such
// an offset would make the group's next member start at whatever the end
// is then, past the messages sent between the commit and its start, which
// no member would ever get.
func TestPullConsumer_CommitPastTheEndIsRefused(t *testing.T) {
	forTransports(t, testPullConsumer_CommitPastTheEndIsRefused)
}

func testPullConsumer_CommitPastTheEndIsRefused(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	q := equeue.QueueRef{Topic: "t"}
	appendTo(t, e, q, 5)
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	require.NoError(t, pc.Seek(q, 100))
	require.NoError(t, pc.Commit(ctx, q, 5), "the end itself is a valid offset")
	err = pc.Commit(ctx, q, 100)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "offset 100 is past the queue's end, 5")
	require.NoError(t, pc.Close())

	appendTo(t, e, q, 3) // 5..7, after the commit
	opts.ID = "p2"
	pc2, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	require.NoError(t, pc2.Start(ctx))
	defer pc2.Close()
	var got []int64
	for range 3 {
		msgs, err := pc2.Fetch(ctx, q, 10, 0)
		require.NoError(t, err)
		for _, m := range msgs {
			got = append(got, m.Offset)
		}
	}
	assert.Equal(t, []int64{5, 6, 7}, got, "the messages sent after the commit reach the group")
}

// A committed offset stored past a queue's end (as builds before the bound
// stored one, or as a store that lost its tail leaves behind) proves the
// offsets below it were given out: the engine raises the queue's end to it
// at open and reports the gap, so the messages sent afterwards get offsets
// past the commit and reach the group, none skipped.
func TestConsumer_OffsetStoredPastTheEndStartsAtTheEnd(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	q := equeue.QueueRef{Topic: "t"}
	appendTo(t, e, q, 5)
	require.NoError(t, equeue.StoreOffsetUnchecked(e, "g", q, 100))
	e = reopen()
	assert.Equal(t, uint64(95), e.Stats().CorruptRecords, "the offsets the commit passed are reported lost")

	var mu sync.Mutex
	var offsets []int64
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			offsets = append(offsets, m.Offset)
			return nil
		}})
	eventually(t, 10*time.Second, func() bool {
		return slices.ContainsFunc(c.Queues(), func(s equeue.QueueStat) bool { return s.QueueRef == q })
	}, "the consumer owns the queue")
	appendTo(t, e, q, 3) // 100..102
	eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(offsets) == 3
	}, "the messages sent after the start are handled")
	require.NoError(t, c.Close(), "the final commit is stored")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int64{100, 101, 102}, offsets, "no offset below the commit is given out again")
	assert.Equal(t, int64(103), startedCommit(t, e, "g"), "the group's offset follows what it handled")
}

// A commit below a queue's first offset, one that retention or a
// drop-oldest limit passed while the member held the queue, is stored: the
// group's next member starts at the first offset, and no message still
// stored is skipped.
func TestPullConsumer_CommitBelowTheFirstOffsetIsStored(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 5}}))
	q := equeue.QueueRef{Topic: "t"}
	appendTo(t, e, q, 5)
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	msgs, err := pc.Fetch(ctx, q, 3, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	appendTo(t, e, q, 5) // 5..9: the limit drops 0..4
	eventually(t, 10*time.Second, func() bool {
		ti, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		return ti.Queues[0].MinOffset == 5
	}, "the limit drops the oldest messages")
	require.NoError(t, pc.Commit(ctx, q, 3), "below the first offset, 5")
	require.NoError(t, pc.Close())

	opts.ID = "p2"
	pc2, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, pc2.Start(ctx))
	defer pc2.Close()
	var got []int64
	for range 3 {
		msgs, err := pc2.Fetch(ctx, q, 10, 0)
		require.NoError(t, err)
		for _, m := range msgs {
			got = append(got, m.Offset)
		}
	}
	assert.Equal(t, []int64{5, 6, 7, 8, 9}, got, "the next member starts at the first stored message")
}
