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

// releaseHoldWrapper wraps an engine and holds its first ReleaseQueues
// until that call's context ends, then reports the context's error on
// ended.
type releaseHoldWrapper struct {
	*equeue.Engine
	held  chan struct{}
	ended chan error
	once  atomic.Bool
}

func (w *releaseHoldWrapper) Unwrap() equeue.Broker { return w.Engine }

func (w *releaseHoldWrapper) ReleaseQueues(ctx context.Context, group, member string, grants []equeue.Grant) error {
	if w.once.CompareAndSwap(false, true) {
		close(w.held)
		<-ctx.Done()
		w.ended <- ctx.Err()
		return ctx.Err()
	}
	return w.Engine.ReleaseQueues(ctx, group, member, grants)
}

// A hand-over (a queue moving to another member) whose release the broker
// holds is bounded by the close that waits for it: a CloseContext whose
// context ends ends the hand-over's wait too, instead of leaving it to run
// to the hand-over's own 10 s while the close waits.
func TestConsumer_CloseContextBoundsAHeldHandOver(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &releaseHoldWrapper{Engine: e, held: make(chan struct{}), ended: make(chan error, 1)}
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			HeartbeatInterval: 50 * time.Millisecond,
			Handler:           func(context.Context, *equeue.Message) error { return nil }}
	}
	a, err := equeue.NewConsumer(b, opts("b"))
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	eventually(t, waitLong, func() bool {
		n := 0
		for _, q := range a.Queues() {
			if q.Topic == "t" {
				n++
			}
		}
		return n == 2
	}, "a holds both queues of t", func() any { return a.Queues() })
	// A second member takes one queue: a hands it over, and the broker
	// holds its release.
	other, err := equeue.NewConsumer(e, opts("a"))
	require.NoError(t, err)
	otherStarted := make(chan error, 1)
	go func() { otherStarted <- other.Start(ctx) }()
	<-b.held

	closeCtx, cancelClose := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- a.CloseContext(closeCtx) }()
	eventually(t, waitLong, func() bool { return errors.Is(a.Start(ctx), equeue.ErrClosed) }, "a's close began")
	cancelClose()
	ended := <-b.ended
	assert.ErrorIs(t, ended, context.Canceled, "the held release ends with the close's context, not at the hand-over's own 10 s")
	assert.ErrorIs(t, <-closed, context.Canceled, "CloseContext reports its context's end")
	require.NoError(t, <-otherStarted)
	require.NoError(t, other.Close())
}
