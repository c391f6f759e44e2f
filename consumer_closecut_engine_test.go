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

// commitHoldWrapper wraps an engine (BrokerWrapper: the engine closes its
// consumers) and holds the first commit of its group until that commit's
// context ends; later commits are refused while refuse is set, else
// stored.
type commitHoldWrapper struct {
	*equeue.Engine
	group  string
	held   chan struct{} // closed when the first commit is held
	once   atomic.Bool
	refuse atomic.Bool
}

func (w *commitHoldWrapper) Unwrap() equeue.Broker { return w.Engine }

func (w *commitHoldWrapper) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if req.Group == w.group && w.once.CompareAndSwap(false, true) {
		close(w.held)
		<-ctx.Done()
		return ctx.Err()
	}
	if req.Group == w.group && w.refuse.Load() {
		return errCommitRefused
	}
	return w.Engine.CommitOffsets(ctx, req)
}

// closeCutRun opens an engine in dir, has a consumer of group g handle one
// message, and closes it with a CloseContext whose context ends while its
// final commit is held, while Engine.Close closes it beside; refuse makes
// the engine's own commit after it fail. It returns the user's close error
// and Engine.Close's.
func closeCutRun(t *testing.T, dir string, refuse bool) (userErr, engineErr error) {
	t.Helper()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &commitHoldWrapper{Engine: e, group: "g", held: make(chan struct{})}
	b.refuse.Store(refuse)
	handled := make(chan struct{}, 1)
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a", Orderly: true,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		CommitInterval: time.Hour,
		Handler: func(context.Context, *equeue.Message) error {
			handled <- struct{}{}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	// A second consumer, on a group of its own, tells when Engine.Close
	// began closing its consumers (c among them, still closing).
	other, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "other", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, other.Start(ctx))
	p := newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("m")})
	require.NoError(t, err)
	<-handled

	userCtx, cancelUser := context.WithCancel(ctx)
	defer cancelUser()
	userClose := make(chan error, 1)
	go func() { userClose <- c.CloseContext(userCtx) }()
	<-b.held // the user's final commit waits for the broker
	engineClose := make(chan error, 1)
	go func() { engineClose <- e.Close() }()
	eventually(t, waitLong, func() bool { return errors.Is(other.Start(ctx), equeue.ErrClosed) },
		"Engine.Close began closing its consumers")
	cancelUser() // the user's own bound ends before the commit is answered
	userErr = <-userClose
	engineErr = <-engineClose
	return userErr, engineErr
}

// committedAt reopens the engine in dir and returns group g's committed
// offset of t's queue 0.
func committedAt(t *testing.T, dir string) int64 {
	t.Helper()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	gi, err := e.Group(ctxT(t), "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" && q.Queue == 0 {
			return q.Committed
		}
	}
	t.Fatalf("no row of t/0 in %+v", gi.Queues)
	return 0
}

// A consumer's CloseContext whose own context ends before its final commit
// is answered returns that context's error to its user. Engine.Close,
// closing the consumer beside it, does not report that error as its own:
// it finishes what the user's close could not (the final commit and the
// leave, within its own bound), and reports nothing when that succeeds.
func TestEngineClose_FinishesAConsumerCloseCutByItsUsersContext(t *testing.T) {
	dir := t.TempDir()
	userErr, engineErr := closeCutRun(t, dir, false)
	require.ErrorIs(t, userErr, context.Canceled, "the user's close reports its own context's end")
	require.NoError(t, engineErr, "Engine.Close finished the final commit the user's close could not")
	assert.EqualValues(t, 1, committedAt(t, dir), "the handled message is committed")
}

// When the engine's own final commit for that consumer fails too, Engine.Close
// reports its own failure, not the user's context's end again.
func TestEngineClose_ReportsItsOwnFailureAfterAConsumerCloseCutByItsUser(t *testing.T) {
	dir := t.TempDir()
	userErr, engineErr := closeCutRun(t, dir, true)
	require.ErrorIs(t, userErr, context.Canceled)
	require.Error(t, engineErr, "the engine's own final commit failed")
	assert.ErrorIs(t, engineErr, errCommitRefused)
	assert.NotErrorIs(t, engineErr, context.Canceled, "the user's context's end is the user's, reported to it once")
	assert.EqualValues(t, 0, committedAt(t, dir), "nothing was committed")
}
