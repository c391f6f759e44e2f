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

// An orderly handler that outlives both of Close's drain waits: Close
// reports it (ErrHandlerAbandoned), its message stays uncommitted, and
// nothing committed later (a Commit after Close, Engine.Close) moves the
// group past it, neither while it runs nor once it returned unfinished.
func TestConsumer_CloseReportsAnOrderlyHandlerPastItsDrain(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for _, body := range []string{"m0", "m1"} {
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	handling, release, returned := make(chan struct{}), make(chan struct{}), make(chan struct{})
	errUnfinished := errors.New("test: not finished")
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", Orderly: true,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		CommitInterval: time.Hour, ShutdownTimeout: 10 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if string(m.Body) != "m0" {
				return nil
			}
			defer close(returned)
			close(handling)
			<-release // ignores its cancelled context
			return errUnfinished
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	<-handling

	cerr := c.Close()
	require.Error(t, cerr, "Close reports the handler it left running")
	assert.ErrorIs(t, cerr, equeue.ErrHandlerAbandoned)
	require.NoError(t, c.Commit(ctx), "a commit after Close has nothing to commit")
	close(release)
	<-returned
	require.NoError(t, c.Commit(ctx))
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	var committed int64 = -2
	for _, q := range gi.Queues {
		if q.Topic == "t" && q.Queue == 0 {
			committed = q.Committed
		}
	}
	assert.EqualValues(t, 0, committed, "the group is not moved past the message its handler did not finish")
}
