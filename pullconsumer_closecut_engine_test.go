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

// leaveHoldWrapper wraps an engine (BrokerWrapper: the engine closes its
// clients) and holds the first leave of member until that leave's context
// ends; a later leave goes through, and the group's state right after it
// is sent on after.
type leaveHoldWrapper struct {
	*equeue.Engine
	member string
	held   chan struct{} // closed when the first leave is held
	once   atomic.Bool
	after  chan equeue.GroupInfo
}

func (w *leaveHoldWrapper) Unwrap() equeue.Broker { return w.Engine }

func (w *leaveHoldWrapper) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if req.Member != w.member {
		return w.Engine.LeaveGroup(ctx, req)
	}
	if w.once.CompareAndSwap(false, true) {
		close(w.held)
		<-ctx.Done()
		return ctx.Err()
	}
	err := w.Engine.LeaveGroup(ctx, req)
	if err == nil {
		gi, gerr := w.Engine.Group(ctx, req.Group)
		if gerr == nil {
			w.after <- gi
		}
	}
	return err
}

// ownBroker is a broker of its own (no Unwrap): Engine.Close does not close
// the clients opened on it.
type ownBroker struct{ equeue.Broker }

// A PullConsumer's CloseContext whose own context ends before its leave is
// answered returns that context's error to its user; Engine.Close, closing
// the pull consumer beside it, leaves the group again within its own
// bound, so the queue goes at once to the other member rather than after
// the session timeout, and reports nothing when that leave succeeds. The
// pull consumer's commit stays.
func TestEngineClose_LeavesForAPullConsumerCloseCutByItsUsersContext(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, &equeue.Options{SessionTimeout: time.Hour})
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for _, body := range []string{"m0", "m1"} {
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	w := &leaveHoldWrapper{Engine: e, member: "a", held: make(chan struct{}), after: make(chan equeue.GroupInfo, 1)}
	opts := func(id string) equeue.PullConsumerOptions {
		return equeue.PullConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			HeartbeatInterval: 50 * time.Millisecond}
	}
	a, err := equeue.NewPullConsumer(w, opts("a"))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	b, err := equeue.NewPullConsumer(ownBroker{e}, opts("b"))
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { assert.NoError(t, b.Close(), "b's leave on the closed engine is no failure") }()
	q := equeue.QueueRef{Topic: "t"}
	require.Equal(t, []equeue.QueueRef{q}, a.Assigned(), "a, first by ID, owns the queue")
	msgs, err := a.Fetch(ctx, q, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, a.Commit(ctx, q, msgs[0].Offset+1))
	// A consumer on a group of its own tells when Engine.Close began
	// closing its clients.
	other, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "other", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, other.Start(ctx))

	userCtx, cancelUser := context.WithCancel(ctx)
	defer cancelUser()
	userClose := make(chan error, 1)
	go func() { userClose <- a.CloseContext(userCtx) }()
	<-w.held // the user's leave waits for the broker
	engineClose := make(chan error, 1)
	go func() { engineClose <- e.Close() }()
	eventually(t, waitLong, func() bool { return errors.Is(other.Start(ctx), equeue.ErrClosed) },
		"Engine.Close began closing its clients")
	cancelUser() // the user's own bound ends before the leave is answered
	require.ErrorIs(t, <-userClose, context.Canceled, "the user's close reports its own context's end")
	require.NoError(t, <-engineClose, "Engine.Close finished the leave the user's close could not")
	select {
	case gi := <-w.after:
		require.Len(t, gi.Members, 1, "no stale member is left: %+v", gi.Members)
		assert.Equal(t, "b", gi.Members[0].ID)
		require.Len(t, gi.Queues, 1)
		assert.Equal(t, "b", gi.Queues[0].Owner, "the queue went to the other member at once")
	default:
		t.Fatal("Engine.Close did not leave the group for the pull consumer its user's close left in it")
	}
	assert.EqualValues(t, 1, committedAt(t, dir), "the pull consumer's commit is kept")
}
