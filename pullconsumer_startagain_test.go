package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// lateFetchBroker answers a member's first FetchOffsets only after its
// context ended, and with the offsets, as a broker whose answer was on its
// way when the call was cancelled: the apply under way completes, and the
// consumer holds the grants and their assignment's version when Start,
// whose ctx cancel ends, fails.
type lateFetchBroker struct {
	equeue.Broker
	cancel  context.CancelFunc // ends the first Start's ctx
	fetches atomic.Int32
}

func (b *lateFetchBroker) FetchOffsets(ctx context.Context, group, member string, grants []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if b.fetches.Add(1) == 1 {
		b.cancel()
		<-ctx.Done() // Start gave up and stopped its membership loop
		return b.Broker.FetchOffsets(context.Background(), group, member, grants)
	}
	return b.Broker.FetchOffsets(ctx, group, member, grants)
}

// TestPullConsumer_StartAgainAfterAFailedStartGetsEveryMessage: a Start
// whose ctx ends while the join's grants are applied fails after that
// apply completed (its grants and their assignment's version were taken,
// then dropped); the next Start joins as a new incarnation, gets the
// group's queues and fetches every message, and a member that joins later
// takes its share from it.
func TestPullConsumer_StartAgainAfterAFailedStartGetsEveryMessage(t *testing.T) {
	const n = 40
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	sendN(t, newProducer(t, e, nil), "t", n, nil)
	first, cancel := context.WithCancel(ctx)
	defer cancel()
	b := &lateFetchBroker{Broker: e, cancel: cancel}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.ErrorIs(t, pc.Start(first), context.Canceled)
	assert.Empty(t, pc.Assigned(), "the failed Start holds no queue")
	assert.Empty(t, groupMembers(t, e, "pg"), "the failed Start left the group")

	require.NoError(t, pc.Start(ctx), "started again")
	require.Len(t, pc.Assigned(), 2, "the second Start holds the group's queues")
	got := 0
	for _, q := range pc.Assigned() {
		msgs, err := pc.Fetch(ctx, q, n, 0)
		require.NoError(t, err)
		got += len(msgs)
		if len(msgs) > 0 {
			require.NoError(t, pc.Commit(ctx, q, msgs[len(msgs)-1].Offset+1))
		}
	}
	assert.Equal(t, n, got, "every message fetched")

	// A second member joins: the first one's assignment changes, and it
	// hands one queue over.
	other, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "pg", ID: "q", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	require.NoError(t, other.Start(ctx))
	eventually(t, 30*time.Second, func() bool { return len(pc.Assigned()) == 1 && len(other.Assigned()) == 1 }, "each member holds one queue")
}
