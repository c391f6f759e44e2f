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

// loseJoinAndLeaveAnswers loses the answers of member's first join and of
// its first leave: the engine took both, as a broker cut off for a moment
// after each call would.
type loseJoinAndLeaveAnswers struct {
	equeue.Broker
	member             string
	joinLost, leftLost atomic.Bool
}

func (b *loseJoinAndLeaveAnswers) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	a, err := b.Broker.JoinGroup(ctx, req)
	if err == nil && req.Member == b.member && b.joinLost.CompareAndSwap(false, true) {
		return equeue.Assignment{}, errors.New("join answer lost")
	}
	return a, err
}

func (b *loseJoinAndLeaveAnswers) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	err := b.Broker.LeaveGroup(ctx, req)
	if err == nil && req.Member == b.member && b.leftLost.CompareAndSwap(false, true) {
		return errors.New("leave answer lost")
	}
	return err
}

// A Start after one whose join's answer was lost, and whose leave for that
// join landed though its answer was lost too, joins: the engine refuses a
// join of the incarnation that left (for SessionTimeout), so Start joins
// as a new one. It was refused ErrNotMember until that departure expired.
func TestConsumer_StartAfterALostJoinWhoseLeaveLandedJoins(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &loseJoinAndLeaveAnswers{Broker: e, member: "c"}
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "c",
		Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler:       func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Error(t, c.Start(ctx), "the join's answer is lost")
	require.True(t, b.leftLost.Load(), "Start left for the join it lost")
	require.False(t, isMember(t, e, "g", "c"), "the leave landed")
	require.NoError(t, c.Start(ctx), "the next Start joins")
	require.True(t, isMember(t, e, "g", "c"))
}

// The same for a PullConsumer.
func TestPullConsumer_StartAfterALostJoinWhoseLeaveLandedJoins(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &loseJoinAndLeaveAnswers{Broker: e, member: "p"}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.Error(t, pc.Start(ctx), "the join's answer is lost")
	require.True(t, b.leftLost.Load(), "Start left for the join it lost")
	require.False(t, isMember(t, e, "g", "p"), "the leave landed")
	require.NoError(t, pc.Start(ctx), "the next Start joins")
	require.True(t, isMember(t, e, "g", "p"))
	require.Len(t, pc.Assigned(), 2)
}
