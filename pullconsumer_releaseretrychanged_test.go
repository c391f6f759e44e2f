package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// failReleases fails a member's first fail ReleaseQueues.
type failReleases struct {
	equeue.Broker
	member string
	fail   int32
	calls  atomic.Int32 // the member's ReleaseQueues, the failed ones too
}

func (b *failReleases) ReleaseQueues(ctx context.Context, group, member string, qs []equeue.Grant) error {
	if member != b.member {
		return b.Broker.ReleaseQueues(ctx, group, member, qs)
	}
	if b.calls.Add(1) <= b.fail {
		return errors.New("release cut off")
	}
	return b.Broker.ReleaseQueues(ctx, group, member, qs)
}

// TestPullConsumer_ReleaseTriedAgainLeavesChangedOpen: the applies that
// try a failed release again change none of the consumer's queues, so
// Changed is not closed by them: it is closed at an assignment change.
// Before, every retry closed it, as the assignment's Revoking named
// queues to release, and a loop that waits on it woke at each one.
func TestPullConsumer_ReleaseTriedAgainLeavesChangedOpen(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &failReleases{Broker: e, member: "p", fail: 3}
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.NoError(t, pc.Start(ctx))

	opts.ID = "q"
	other, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	require.NoError(t, other.Start(ctx))
	// The first apply, which took the queue away, ended: it was retried.
	eventually(t, 10*time.Second, func() bool { return b.calls.Load() >= 2 }, "p's release is tried again")
	changed := pc.Changed()
	assigned := pc.Assigned()
	eventually(t, 20*time.Second, func() bool { return len(other.Assigned()) == 1 }, "q gets its queue")
	require.Equal(t, assigned, pc.Assigned(), "p's queues did not change meanwhile")
	select {
	case <-changed:
		t.Fatalf("Changed was closed by an apply that changed nothing (p's releases: %d)", b.calls.Load())
	default:
	}
}
