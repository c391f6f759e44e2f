package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A PullConsumer's Commit of a queue that moved to another member, and
// of one that moved away and came back (granted anew) while it held a
// position under the old grant: both are refused, and the group's offset
// stays where the new owner put it.
func TestHuntGroups_PullCommitOfAQueueThatMovedAway(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 2))
	huntSend(t, e, "t", 2, "m", 20)
	opts := func(id string) equeue.PullConsumerOptions {
		return equeue.PullConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			HeartbeatInterval: 50 * time.Millisecond}
	}
	a, err := equeue.NewPullConsumer(e, opts("a"))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctxT(t)))
	defer func() { _ = a.Close() }()
	q0, q1 := equeue.QueueRef{Topic: "t", Queue: 0}, equeue.QueueRef{Topic: "t", Queue: 1}
	for _, q := range []equeue.QueueRef{q0, q1} {
		msgs, err := a.Fetch(ctxT(t), q, 10, 0)
		require.NoError(t, err)
		require.Len(t, msgs, 10)
	}
	b, err := equeue.NewPullConsumer(e, opts("b"))
	require.NoError(t, err)
	require.NoError(t, b.Start(ctxT(t)))
	eventually(t, 5*time.Second, func() bool { return len(a.Assigned()) == 1 && len(b.Assigned()) == 1 }, "the queues split")
	moved := b.Assigned()[0]
	kept := a.Assigned()[0]
	err = a.Commit(ctxT(t), moved, 10)
	assert.ErrorIs(t, err, equeue.ErrFenced, "a commit of a queue that moved away")
	offs, err := e.GroupOffsets(ctxT(t), "g")
	require.NoError(t, err)
	assert.EqualValues(t, 0, offs[moved], "nothing committed for the moved queue")

	// b fetches part of the moved queue and commits it, then leaves: the
	// queue comes back to a, whose position under the new grant is b's
	// commit.
	msgs, err := b.Fetch(ctxT(t), moved, 3, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	require.NoError(t, b.Commit(ctxT(t), moved, 3))
	require.NoError(t, b.Close())
	eventually(t, 5*time.Second, func() bool { return len(a.Assigned()) == 2 }, "the queue comes back")
	pos, ok := a.Position(moved)
	require.True(t, ok)
	assert.EqualValues(t, 3, pos, "the position under the new grant is the committed offset")
	assert.ErrorIs(t, a.Commit(ctxT(t), moved, 10), equeue.ErrFenced, "progress of the old grant is refused")
	assert.NoError(t, a.Commit(ctxT(t), kept, 10))
	offs, err = e.GroupOffsets(ctxT(t), "g")
	require.NoError(t, err)
	assert.EqualValues(t, 3, offs[moved])
	assert.EqualValues(t, 10, offs[kept])
}

// ResetOffsets to the earliest under two PullConsumers that fetched and
// committed: each keeps its queue (the release of its old grant gives up
// nothing), a commit of the old grant's progress is refused, and each
// fetches again from the start.
func TestHuntGroups_PullConsumersAcrossAReset(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 2))
	huntSend(t, e, "t", 2, "m", 20)
	var pcs []*equeue.PullConsumer
	for _, id := range []string{"a", "b"} {
		pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", ID: id,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctxT(t)))
		defer func() { _ = pc.Close() }()
		pcs = append(pcs, pc)
	}
	eventually(t, 5*time.Second, func() bool { return len(pcs[0].Assigned()) == 1 && len(pcs[1].Assigned()) == 1 }, "the queues split")
	owned := map[*equeue.PullConsumer]equeue.QueueRef{}
	for _, pc := range pcs {
		q := pc.Assigned()[0]
		owned[pc] = q
		msgs, err := pc.Fetch(ctxT(t), q, 6, 0)
		require.NoError(t, err)
		require.Len(t, msgs, 6)
		require.NoError(t, pc.Commit(ctxT(t), q, 6))
	}
	changed := []<-chan struct{}{pcs[0].Changed(), pcs[1].Changed()}
	require.NoError(t, e.ResetOffsets(ctxT(t), "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	for i, pc := range pcs {
		select {
		case <-changed[i]:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s saw no change after the reset", pc.ID())
		}
		q := owned[pc]
		eventually(t, 5*time.Second, func() bool {
			pos, ok := pc.Position(q)
			return ok && pos == 0
		}, "%s is back at the start of %v", pc.ID(), q)
	}
	for _, pc := range pcs {
		q := owned[pc]
		assert.Equal(t, []equeue.QueueRef{q}, pc.Assigned(), "%s keeps its queue", pc.ID())
		msgs, err := pc.Fetch(ctxT(t), q, 20, 0)
		require.NoError(t, err)
		require.Len(t, msgs, 10)
		assert.EqualValues(t, 0, msgs[0].Offset)
		require.NoError(t, pc.Commit(ctxT(t), q, 10))
	}
	assert.EqualValues(t, 20, huntCommitted(t, e, "g"))
}
