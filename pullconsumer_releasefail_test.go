package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// failFirstRelease fails a member's first ReleaseQueues, as a broker cut
// off for a moment would; the engine keeps the queues granted to it.
type failFirstRelease struct {
	equeue.Broker
	member string
	failed atomic.Bool
	calls  atomic.Int32 // the member's ReleaseQueues, the failed one too
}

func (b *failFirstRelease) ReleaseQueues(ctx context.Context, group, member string, qs []equeue.Grant) error {
	if member != b.member {
		return b.Broker.ReleaseQueues(ctx, group, member, qs)
	}
	b.calls.Add(1)
	if b.failed.CompareAndSwap(false, true) {
		return errors.New("release cut off")
	}
	return b.Broker.ReleaseQueues(ctx, group, member, qs)
}

// TestPullConsumer_ReleaseThatFailedIsTriedAgain: a PullConsumer whose
// release of a queue taken away from it failed tries it again, so the
// queue reaches the member it was moved to. Before, the failure was only
// logged and the assignment counted as applied: the queue stayed granted
// to the first member, its heartbeats long-polled on an unchanged
// assignment, and the other member never got it.
func TestPullConsumer_ReleaseThatFailedIsTriedAgain(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &failFirstRelease{Broker: e, member: "p"}
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.NoError(t, pc.Start(ctx))
	require.Len(t, pc.Assigned(), 2, "p holds both queues")

	// q joins: one queue moves to it, and p's first release of it fails.
	opts.ID = "q"
	other, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	require.NoError(t, other.Start(ctx))
	eventually(t, 10*time.Second, func() bool { return len(pc.Assigned()) == 1 && len(other.Assigned()) == 1 },
		"each member holds one queue (p: %v, q: %v, p's releases: %v)",
		func() any { return pc.Assigned() }, func() any { return other.Assigned() }, func() any { return b.calls.Load() })
	assert.True(t, b.failed.Load(), "p's first release failed")
	assert.GreaterOrEqual(t, b.calls.Load(), int32(2), "p released again")
}
