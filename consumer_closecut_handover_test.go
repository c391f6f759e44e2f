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

// A hand-over's commit that a CloseContext's context cut (the close
// bounds the hand-overs it waits for) is part of what the user's close
// could not do: Engine.Close, finishing that close, commits the handed
// message too, so that the queue's next owner does not get it again.
func TestEngineClose_FinishesAHandOverCommitCutByItsUsersClose(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &commitHoldWrapper{Engine: e, group: "g", held: make(chan struct{})}
	handled := make(chan struct{}, 1)
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			HeartbeatInterval: 50 * time.Millisecond, CommitInterval: time.Hour,
			Handler: func(context.Context, *equeue.Message) error {
				handled <- struct{}{}
				return nil
			}}
	}
	// Member "b" holds both queues and handles a message of queue 0,
	// which the average strategy gives member "a" once it joins.
	c, err := equeue.NewConsumer(b, opts("b"))
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, waitLong, func() bool {
		n := 0
		for _, q := range c.Queues() {
			if q.Topic == "t" {
				n++
			}
		}
		return n == 2
	}, "b holds both queues of t", func() any { return c.Queues() })
	p := newProducer(t, e, &equeue.ProducerOptions{
		Selector: equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { return 0 })})
	sent, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("m")})
	require.NoError(t, err)
	require.Equal(t, 0, sent.Queue)
	<-handled

	other, err := equeue.NewConsumer(e, opts("a"))
	require.NoError(t, err)
	otherStarted := make(chan error, 1)
	go func() { otherStarted <- other.Start(ctx) }()
	<-b.held // b hands queue 0 over; the broker holds its commit

	require.NoError(t, <-otherStarted)
	// A consumer of a group of its own tells when Engine.Close began
	// closing its consumers.
	probe, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "probe", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, probe.Start(ctx))

	userCtx, cancelUser := context.WithCancel(ctx)
	defer cancelUser()
	userClose := make(chan error, 1)
	go func() { userClose <- c.CloseContext(userCtx) }()
	eventually(t, waitLong, func() bool { return errors.Is(c.Start(ctx), equeue.ErrClosed) }, "b's close began")
	require.NoError(t, other.Close()) // queue 0 is still b's: a commits nothing of it
	engineClose := make(chan error, 1)
	go func() { engineClose <- e.Close() }()
	eventually(t, waitLong, func() bool { return errors.Is(probe.Start(ctx), equeue.ErrClosed) },
		"Engine.Close began closing its consumers")
	cancelUser() // ends the hand-over's commit, and the close's leave
	require.ErrorIs(t, <-userClose, context.Canceled)
	require.NoError(t, <-engineClose, "Engine.Close finished b's close")
	assert.EqualValues(t, 1, committedAt(t, dir), "the handed-over message is committed")
}
