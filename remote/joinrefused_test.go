package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// countLeaves counts the leaves sent through it.
type countLeaves struct {
	equeue.Broker
	leaves atomic.Int32
}

func (b *countLeaves) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	b.leaves.Add(1)
	return b.Broker.LeaveGroup(ctx, req)
}

// A join the engine refused is known refused on the client
// (equeue.ErrJoinRefused beside the cause), so a Start refused through
// the wire sends no leave, and no member is left.
func TestJoinGroup_RefusalCrossesTheWire(t *testing.T) {
	e, c := setup(t, &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "u", 2))
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "x", Subscriptions: []equeue.Subscription{{Topic: "u"}}})
	require.NoError(t, err)

	_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "y", Subscriptions: []equeue.Subscription{{Topic: "missing"}}})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused)

	b := &countLeaves{Broker: c}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	err = pc.Start(ctx)
	assert.ErrorIs(t, err, equeue.ErrSubscriptionMismatch)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused)
	assert.Zero(t, b.leaves.Load(), "no leave after a refused join")
	require.NoError(t, pc.Close())
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, "x", gi.Members[0].ID)
}
