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

// loseFirstJoin loses the answer of a member's first join (the engine
// joined it), as a broker cut off for a moment would, fails the leave
// Start then sends (still cut off), and fails its first ReleaseQueues.
type loseFirstJoin struct {
	failFirstRelease
	lost, leaveLost atomic.Bool
}

func (b *loseFirstJoin) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if req.Member == b.member && b.leaveLost.CompareAndSwap(false, true) {
		return errors.New("leave not sent")
	}
	return b.Broker.LeaveGroup(ctx, req)
}

func (b *loseFirstJoin) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	a, err := b.Broker.JoinGroup(ctx, req)
	if err == nil && req.Member == b.member && b.lost.CompareAndSwap(false, true) {
		return equeue.Assignment{}, errors.New("join answer lost")
	}
	return a, err
}

// TestPullConsumer_StartHoldsItsGrantsWhenAReleaseFails: a Start whose
// join's assignment takes a queue away (the member joined once already,
// its answer lost, and another member came) and whose release of it fails
// returns nil: its grants are usable, and the release is tried again, so
// the queue reaches the other member. Before, the release's error failed
// the first apply, and with it Start, which left the group.
func TestPullConsumer_StartHoldsItsGrantsWhenAReleaseFails(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &loseFirstJoin{failFirstRelease: failFirstRelease{Broker: e, member: "p"}}
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	pc, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.Error(t, pc.Start(ctx), "the join's answer is lost")
	require.True(t, b.leaveLost.Load(), "Start tried to leave for the join it lost")

	// q joins while p, joined in the engine, holds both queues.
	opts.ID = "q"
	other, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	require.NoError(t, other.Start(ctx))

	// p's Start again: its join's assignment takes a queue away, and the
	// release of it fails once.
	require.NoError(t, pc.Start(ctx), "a release that failed is tried again; Start holds its grants")
	require.True(t, b.failed.Load(), "p's first release failed")
	eventually(t, 10*time.Second, func() bool { return len(pc.Assigned()) == 1 && len(other.Assigned()) == 1 },
		"each member holds one queue (p: %v, q: %v, p's releases: %v)",
		func() any { return pc.Assigned() }, func() any { return other.Assigned() }, func() any { return b.calls.Load() })
}
