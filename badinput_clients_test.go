package equeue_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The clients check their arguments before what they own or what exists:
// a PullConsumer's Fetch and Commit give ErrInvalidArgument for a bad
// argument whether or not the consumer holds the queue, a Consumer's
// Commit whether or not it has anything to commit, and a Producer's sends
// ErrInvalidDelay for a negative delay or TTL whether or not the topic
// exists.
func TestBadInput_ClientsCheckArgumentsFirst(t *testing.T) {
	var nilCtx context.Context
	q := equeue.QueueRef{Topic: "t"}
	for _, started := range []bool{false, true} {
		name := "not started"
		if started {
			name = "started"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pc.Close() })
			c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g2", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Handler: func(context.Context, *equeue.Message) error { return nil }})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			if started {
				require.NoError(t, pc.Start(ctx))
				require.NoError(t, c.Start(ctx))
				eventually(t, 30*time.Second, func() bool { return slices.Contains(pc.Assigned(), q) }, "t/0 assigned")
			}
			p := newProducer(t, e, nil)
			cases := []struct {
				name string
				call func() error
				want error
			}{
				{"Fetch max -1", func() error { _, err := pc.Fetch(ctx, q, -1, 0); return err }, equeue.ErrInvalidArgument},
				{"Fetch max huge", func() error { _, err := pc.Fetch(ctx, q, math.MaxInt, 0); return err }, equeue.ErrInvalidArgument},
				{"Fetch negative wait", func() error { _, err := pc.Fetch(ctx, q, 1, -time.Second); return err }, equeue.ErrInvalidArgument},
				{"Fetch nil context", func() error { _, err := pc.Fetch(nilCtx, q, 1, 0); return err }, equeue.ErrInvalidArgument},
				{"Commit negative offset", func() error { return pc.Commit(ctx, q, -1) }, equeue.ErrInvalidArgument},
				{"Commit nil context", func() error { return pc.Commit(nilCtx, q, 0) }, equeue.ErrInvalidArgument},
				{"Consumer Commit nil context", func() error { return c.Commit(nilCtx) }, equeue.ErrInvalidArgument},
				{"Send negative delay, known topic", func() error {
					_, err := p.Send(ctx, &equeue.Message{Topic: "t", Delay: -1})
					return err
				}, equeue.ErrInvalidDelay},
				{"Send negative delay, unknown topic", func() error {
					_, err := p.Send(ctx, &equeue.Message{Topic: "nope", Delay: -1})
					return err
				}, equeue.ErrInvalidDelay},
				{"SendBatch negative TTL, unknown topic", func() error {
					_, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "nope"}, {Topic: "nope", TTL: -1}})
					return err
				}, equeue.ErrInvalidDelay},
			}
			for _, c := range cases {
				var err error
				require.NotPanics(t, func() { err = c.call() }, c.name)
				assert.ErrorIs(t, err, c.want, c.name)
			}
		})
	}
}
