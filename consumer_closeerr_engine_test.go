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

// errCommitRefused is the failure commitFailWrapper answers.
var errCommitRefused = errors.New("test: commit refused")

// commitFailWrapper wraps an engine (BrokerWrapper: the engine closes its
// consumers) and refuses every commit of group fail.
type commitFailWrapper struct {
	*equeue.Engine
	fail string
}

func (w *commitFailWrapper) Unwrap() equeue.Broker { return w.Engine }

func (w *commitFailWrapper) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if req.Group == w.fail {
		return errCommitRefused
	}
	return w.Engine.CommitOffsets(ctx, req)
}

// A consumer closed by its user (CloseContext) whose final commit fails
// while Engine.Close closes the same consumer: Engine.Close waits for
// that close and reports the failed commit, as it does for a consumer it
// closes itself.
func TestEngineClose_ReportsTheFailedCommitOfAConsumerClosingBeside(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &commitFailWrapper{Engine: e, fail: "g1"}
	start := func(group string, release <-chan struct{}, handling chan<- struct{}) *equeue.Consumer {
		c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: group, ID: "a", Orderly: true,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
			CommitInterval: time.Hour,
			Handler: func(context.Context, *equeue.Message) error {
				select {
				case handling <- struct{}{}:
				default:
				}
				<-release
				return nil
			}})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		return c
	}
	release1, release2 := make(chan struct{}), make(chan struct{})
	handling1, handling2 := make(chan struct{}, 1), make(chan struct{}, 1)
	c1 := start("g1", release1, handling1)
	c2 := start("g2", release2, handling2)
	p := newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("m")})
	require.NoError(t, err)
	<-handling1 // each consumer handles the message, and waits
	<-handling2
	closed := func(c *equeue.Consumer) func() bool {
		return func() bool { return errors.Is(c.Start(ctx), equeue.ErrClosed) }
	}

	userClose := make(chan error, 1)
	go func() { userClose <- c1.CloseContext(ctx) }()
	eventually(t, waitLong, closed(c1), "the user's close of c1 began")
	engineClose := make(chan error, 1)
	go func() { engineClose <- e.Close() }()
	// Engine.Close took its consumers (c1, still closing, among them)
	// before it closes any: c2 closing says it did.
	eventually(t, waitLong, closed(c2), "Engine.Close began closing its consumers")
	close(release1)
	uerr := <-userClose
	require.ErrorIs(t, uerr, errCommitRefused, "the user's close reports its failed final commit")
	close(release2)
	eerr := <-engineClose
	require.Error(t, eerr, "Engine.Close reports the failed final commit of the consumer it closed beside its user")
	assert.ErrorIs(t, eerr, errCommitRefused)
	assert.ErrorIs(t, e.Close(), errCommitRefused, "a later Close returns the first one's result")
}
