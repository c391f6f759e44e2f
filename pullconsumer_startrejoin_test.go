package equeue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// rejoinBroker holds a member's first FetchOffsets until its context
// ends, and answers the first heartbeat after that call began
// ErrNotMember, as after the member's expiry: the membership loop then
// cancels the apply under way and joins again.
type rejoinBroker struct {
	equeue.Broker
	fetches  atomic.Int32
	entered  chan struct{}
	once     sync.Once
	expired  atomic.Bool
	rejoined atomic.Int32
}

func (b *rejoinBroker) FetchOffsets(ctx context.Context, group, member string, grants []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if b.fetches.Add(1) == 1 {
		b.once.Do(func() { close(b.entered) })
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return b.Broker.FetchOffsets(ctx, group, member, grants)
}

func (b *rejoinBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if b.fetches.Load() > 0 && b.expired.CompareAndSwap(false, true) {
		return equeue.Assignment{}, equeue.ErrNotMember
	}
	return b.Broker.Heartbeat(ctx, req)
}

func (b *rejoinBroker) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if b.fetches.Load() > 0 {
		b.rejoined.Add(1)
	}
	return b.Broker.JoinGroup(ctx, req)
}

// TestPullConsumer_StartSurvivesARejoinWhileApplyingItsGrants: the member
// is expired while Start applies its join's grants; the membership loop
// cancels that apply and joins again. Start returns once the new join's
// grants are applied. Before, it returned the cancelled apply's
// context.Canceled (its own ctx live), left the group, and had to be
// called again.
func TestPullConsumer_StartSurvivesARejoinWhileApplyingItsGrants(t *testing.T) {
	ctx := ctxT(t)
	e, b := openOver(t, "inproc", "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	rb := &rejoinBroker{Broker: b, entered: make(chan struct{})}
	pc, err := equeue.NewPullConsumer(rb, equeue.PullConsumerOptions{Group: "g", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	err = pc.Start(ctx)
	require.NoError(t, err, "Start's ctx did not end")
	assert.Positive(t, rb.rejoined.Load(), "the loop joined again")
	assert.Len(t, pc.Assigned(), 2, "the new join's grants are applied")
}
