package equeue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A commit of progress made under a grant that a reset replaced does not
// skip the reset's replay: the consumer fetched 10..19 before the
// operator reset the group to the earliest message; its late commit of 20
// under the new grant would pass 0..9, which the group is to handle
// again, and a restart would start after them.
func TestPullConsumer_StaleCommitAfterResetIsFenced(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 20 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
		require.NoError(t, err)
	}
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	q := equeue.QueueRef{Topic: "t"}
	msgs, err := pc.Fetch(ctx, q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 10)
	require.NoError(t, pc.Commit(ctx, q, 10))
	msgs, err = pc.Fetch(ctx, q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 10, "10..19 in hand")

	require.NoError(t, e.ResetOffsets(ctx, "pg", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	eventually(t, 10*time.Second, func() bool { pos, ok := pc.Position(q); return ok && pos == 0 }, "the new grant starts at the reset's offset")

	err = pc.Commit(ctx, q, msgs[len(msgs)-1].Offset+1)
	assert.ErrorIs(t, err, equeue.ErrFenced, "progress of the replaced grant is not committed under the new one")
	gi, err := e.Group(ctx, "pg")
	require.NoError(t, err)
	assert.Equal(t, int64(0), gi.Queues[0].Committed, "the reset's replay is still ahead")
	require.NoError(t, pc.Close())

	// The next member of the group gets the replay.
	opts.ID = "p2"
	pc2, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, pc2.Start(ctx))
	defer pc2.Close()
	msgs, err = pc2.Fetch(ctx, q, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, int64(0), msgs[0].Offset)
}
