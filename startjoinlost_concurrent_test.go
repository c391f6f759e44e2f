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

// loseJoinHoldLeave loses the answer of member's first join (the engine
// joined it) and holds the leave that follows it until proceed is closed,
// telling leaving when it is held: the window in which a second Start of
// the same consumer may run.
type loseJoinHoldLeave struct {
	equeue.Broker
	member           string
	lost, held       atomic.Bool
	leaving, proceed chan struct{}
}

func newLoseJoinHoldLeave(b equeue.Broker, member string) *loseJoinHoldLeave {
	return &loseJoinHoldLeave{Broker: b, member: member, leaving: make(chan struct{}), proceed: make(chan struct{})}
}

func (b *loseJoinHoldLeave) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	a, err := b.Broker.JoinGroup(ctx, req)
	if err == nil && req.Member == b.member && b.lost.CompareAndSwap(false, true) {
		return equeue.Assignment{}, errors.New("join answer lost")
	}
	return a, err
}

func (b *loseJoinHoldLeave) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if req.Member == b.member && b.held.CompareAndSwap(false, true) {
		close(b.leaving)
		<-b.proceed
	}
	return b.Broker.LeaveGroup(ctx, req)
}

// isMember reports whether id is a live member of group on e.
func isMember(t *testing.T, e *equeue.Engine, group, id string) bool {
	t.Helper()
	gi, err := e.Group(ctxT(t), group)
	require.NoError(t, err)
	for _, m := range gi.Members {
		if m.ID == id {
			return true
		}
	}
	return false
}

// concurrentStartDuringLostJoinLeave runs a first Start whose join's answer
// is lost, and, while that Start's leave is held, a second Start of the
// same consumer; it returns the second Start's error once both returned.
func concurrentStartDuringLostJoinLeave(t *testing.T, b *loseJoinHoldLeave, start func(context.Context) error) error {
	t.Helper()
	ctx := ctxT(t)
	first := make(chan error, 1)
	go func() { first <- start(ctx) }()
	select {
	case <-b.leaving:
	case <-time.After(time.Minute):
		t.Fatal("the first Start did not leave for its lost join")
	}
	second := start(ctx)
	close(b.proceed)
	require.Error(t, <-first, "the first Start's join answer was lost")
	return second
}

// A Start of a Consumer while another Start of it leaves for a join whose
// answer was lost does not end up with no member: that leave, of the same
// incarnation, removed the member the second Start had just joined, which
// returned nil all the same.
func TestConsumer_StartDuringTheLeaveOfALostJoinStaysAMember(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := newLoseJoinHoldLeave(e, "c")
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "c",
		Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler:       func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	if err := concurrentStartDuringLostJoinLeave(t, b, c.Start); err != nil {
		require.ErrorIs(t, err, equeue.ErrInvalidArgument, "refused as a Start while one runs")
		require.NoError(t, c.Start(ctx))
	}
	require.True(t, isMember(t, e, "g", "c"), "the consumer, started, is a member of its group")
}

// The same for a PullConsumer.
func TestPullConsumer_StartDuringTheLeaveOfALostJoinStaysAMember(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := newLoseJoinHoldLeave(e, "p")
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	if err := concurrentStartDuringLostJoinLeave(t, b, pc.Start); err != nil {
		require.ErrorIs(t, err, equeue.ErrClosed, "refused as a Start while one runs")
		require.NoError(t, pc.Start(ctx))
	}
	require.True(t, isMember(t, e, "g", "p"), "the pull consumer, started, is a member of its group")
	require.Len(t, pc.Assigned(), 2, "it holds the group's queues")
}
