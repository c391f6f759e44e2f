package equeue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A Consumer closed by its user while Start waits for its first apply
// (failing again and again for a passing reason) makes Start return
// ErrClosed: the queues granted at join time are not being consumed, so
// nil, which says they are, would be wrong.
func TestConsumer_CloseWhileStartWaitsForItsFirstApplyFailsStart(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	b := &restartingBroker{Engine: e, err: errors.New("test: fetch refused for now"),
		failed: make(chan struct{}, 1), restarted: make(chan struct{})}
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- c.Start(context.Background()) }()
	<-b.failed // the first apply failed, and is tried again
	require.NoError(t, c.Close())
	require.ErrorIs(t, <-started, equeue.ErrClosed, "Start reports the Close that came while it waited")
}
