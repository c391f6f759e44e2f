package equeue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// abandonedCutRun opens an engine in dir whose orderly consumer of group g
// handles m0 and is stuck in m1's handler past both of Close's drain
// waits, and closes it with a CloseContext whose context ends while its
// final commit (of m0) is held, Engine.Close closing the consumer beside.
// lateSuccess lets m1's handler return nil before the user's close ends;
// otherwise it returns only once Engine.Close did. It returns the user's
// close error and Engine.Close's.
func abandonedCutRun(t *testing.T, dir string, lateSuccess bool) (userErr, engineErr error) {
	t.Helper()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &commitHoldWrapper{Engine: e, group: "g", held: make(chan struct{})}
	handling, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a", Orderly: true,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		CommitInterval: time.Hour, ShutdownTimeout: 10 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if string(m.Body) != "m1" {
				return nil
			}
			defer close(returned)
			close(handling)
			<-release // ignores its cancelled context
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	other, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "other", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, other.Start(ctx))
	p := newProducer(t, e, nil)
	for _, body := range []string{"m0", "m1"} {
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	<-handling
	// Read before the user's close takes the runner from the consumer.
	committable := equeue.CommittableOf(c, equeue.QueueRef{Topic: "t", Queue: 0})
	require.EqualValues(t, 1, committable(), "m0 handled, m1 running")

	userCtx, cancelUser := context.WithCancel(ctx)
	defer cancelUser()
	userClose := make(chan error, 1)
	go func() { userClose <- c.CloseContext(userCtx) }()
	<-b.held // past the drain: m1's handler abandoned, the commit of m0 held
	engineClose := make(chan error, 1)
	go func() { engineClose <- e.Close() }()
	eventually(t, waitLong, func() bool { return errors.Is(other.Start(ctx), equeue.ErrClosed) },
		"Engine.Close began closing its consumers")
	if lateSuccess {
		close(release)
		<-returned
		// The handler's own defer runs before the runner records its
		// success: cut the user's close only once it is recorded, or the
		// engine's commit may run before it (a test race, not a lost
		// success).
		eventually(t, waitLong, func() bool { return committable() == 2 }, "m1's success is recorded")
	}
	cancelUser()
	userErr = <-userClose
	engineErr = <-engineClose
	if !lateSuccess {
		close(release)
		<-returned
	}
	return userErr, engineErr
}

// A handler the user's close abandoned, and that returns success before
// Engine.Close does the final commit that close's context cut, has its
// message committed by Engine.Close; ErrHandlerAbandoned is reported once,
// to the user, and Engine.Close, which finished its part, reports nothing.
func TestEngineClose_CommitsALateSuccessOfAHandlerACutCloseAbandoned(t *testing.T) {
	dir := t.TempDir()
	userErr, engineErr := abandonedCutRun(t, dir, true)
	require.ErrorIs(t, userErr, context.Canceled)
	require.ErrorIs(t, userErr, equeue.ErrHandlerAbandoned, "the user's close reports the handler it left running")
	assert.NoError(t, engineErr, "Engine.Close reports only what it failed to finish")
	assert.EqualValues(t, 2, committedAt(t, dir), "the late success is committed by Engine.Close's final commit")
}

// A handler still running when Engine.Close does the final commit a cut
// close left is not committed, and Engine.Close does not report it again.
func TestEngineClose_DoesNotReportAgainAHandlerACutCloseAbandoned(t *testing.T) {
	dir := t.TempDir()
	userErr, engineErr := abandonedCutRun(t, dir, false)
	require.ErrorIs(t, userErr, context.Canceled)
	require.ErrorIs(t, userErr, equeue.ErrHandlerAbandoned)
	assert.NoError(t, engineErr, "the abandoned handler was reported to the user's close, once")
	assert.EqualValues(t, 1, committedAt(t, dir), "the message of the handler still running is not committed")
}
