package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// lostJoinStart runs start (a Consumer's or a PullConsumer's Start) with a
// context that ends while the broker holds its join, then lets that join
// reach the engine, as a join whose answer was lost. It returns Start's
// error and the late join's.
func lostJoinStart(t *testing.T, e *equeue.Engine, l *lateJoinServer, start func(context.Context) error) (startErr, joinErr error) {
	t.Helper()
	l.hold.Store(true)
	sctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- start(sctx) }()
	<-l.entered
	cancel()
	startErr = <-started
	close(l.release)
	return startErr, <-l.done
}

// A Consumer's Start whose join the broker took though its answer was lost
// (Start's context ended first) leaves the group before it returns: the
// join, landing late, is refused, no member is left to hold the queues
// until its session expires, and the next Start joins at once.
func TestConsumer_StartWhoseJoinAnswerWasLostLeaves(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{SessionTimeout: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	l, addr := serveLateJoin(t, e)
	c := dial(t, addr, nil)
	cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: "c",
		Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler:       newCollector().handler("c"), HeartbeatInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	startErr, joinErr := lostJoinStart(t, e, l, cons.Start)
	require.ErrorIs(t, startErr, context.Canceled)
	require.Error(t, joinErr, "the late join is refused")
	assert.Contains(t, joinErr.Error(), equeue.ErrNotMember.Error())
	if gi, err := e.Group(ctx, "g"); err == nil {
		assert.Empty(t, gi.Members, "no member is left by the lost join")
	}
	require.NoError(t, cons.Start(ctx), "the next Start joins")
	require.NoError(t, cons.Close())
}

// The same for a PullConsumer.
func TestPullConsumer_StartWhoseJoinAnswerWasLostLeaves(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{SessionTimeout: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	l, addr := serveLateJoin(t, e)
	c := dial(t, addr, nil)
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	startErr, joinErr := lostJoinStart(t, e, l, pc.Start)
	require.ErrorIs(t, startErr, context.Canceled)
	require.Error(t, joinErr, "the late join is refused")
	assert.Contains(t, joinErr.Error(), equeue.ErrNotMember.Error())
	if gi, err := e.Group(ctx, "g"); err == nil {
		assert.Empty(t, gi.Members, "no member is left by the lost join")
	}
	require.NoError(t, pc.Start(ctx), "the next Start joins")
	require.NoError(t, pc.Close())
}
