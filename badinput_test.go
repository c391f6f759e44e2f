package equeue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestBadInput_DocumentedErrors feeds invalid input to every entry point:
// each returns its documented error and nothing panics.
func TestBadInput_DocumentedErrors(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{MaxMessageSize: 1 << 10, MaxDelay: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	ok := func(context.Context, *equeue.Message) error { return nil }
	var nilCtx context.Context
	cases := []struct {
		name string
		call func() error
		want error
	}{
		{"empty topic name", func() error { return e.CreateTopic(ctx, "", 1) }, equeue.ErrInvalidName},
		{"long topic name", func() error { return e.CreateTopic(ctx, strings.Repeat("a", 128), 1) }, equeue.ErrInvalidName},
		{"reserved prefix", func() error { return e.CreateTopic(ctx, "%DLQ%x", 1) }, equeue.ErrInvalidName},
		{"zero queues add", func() error { return e.AddQueues(ctx, "t", 0) }, equeue.ErrInvalidArgument},
		{"too many queues", func() error { return e.CreateTopic(ctx, "q", 1000) }, equeue.ErrInvalidArgument},
		{"oversized message", func() error {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 2<<10)})
			return err
		}, equeue.ErrMessageTooLarge},
		{"nil message", func() error { _, err := p.Send(ctx, nil); return err }, equeue.ErrInvalidArgument},
		{"nil context", func() error {
			_, err := p.Send(nilCtx, &equeue.Message{Topic: "t"})
			return err
		}, equeue.ErrInvalidArgument},
		{"empty batch", func() error { _, err := p.SendBatch(ctx, nil); return err }, equeue.ErrInvalidArgument},
		{"nil context (pull consumer close)", func() error {
			pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			if err != nil {
				return err
			}
			defer func() { _ = pc.Close() }()
			return pc.CloseContext(nilCtx)
		}, equeue.ErrInvalidArgument},
		{"nil context (consumer close)", func() error {
			c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			return c.CloseContext(nilCtx)
		}, equeue.ErrInvalidArgument},
		{"unknown topic", func() error { _, err := p.Send(ctx, &equeue.Message{Topic: "nope"}); return err }, equeue.ErrTopicNotFound},
		{"negative delay", func() error {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Delay: -1})
			return err
		}, equeue.ErrInvalidDelay},
		{"too long delay", func() error {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Delay: 2 * time.Hour})
			return err
		}, equeue.ErrInvalidDelay},
		{"append to missing queue", func() error {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 9, Messages: []*equeue.Message{{}}})
			return err
		}, equeue.ErrQueueNotFound},
		{"append nothing", func() error { _, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t"}); return err }, equeue.ErrInvalidArgument},
		{"append nil request", func() error { _, err := e.Append(ctx, nil); return err }, equeue.ErrInvalidArgument},
		{"bad sync policy", func() error {
			_, err := equeue.NewProducer(e, &equeue.ProducerOptions{Sync: &equeue.SyncPolicy{}})
			if err != nil {
				return err
			}
			bad := equeue.SyncInterval(-time.Second)
			_, err = equeue.NewProducer(e, &equeue.ProducerOptions{Sync: &bad})
			return err
		}, equeue.ErrInvalidOptions},
		{"nil handler", func() error {
			_, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			return err
		}, equeue.ErrInvalidOptions},
		{"negative retry delay", func() error {
			_, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok, RetryDelays: []time.Duration{-1}})
			return err
		}, equeue.ErrInvalidOptions},
		{"unknown group (admin)", func() error { _, err := e.Group(ctx, "nope"); return err }, equeue.ErrGroupNotFound},
		{"unknown group (reset)", func() error { return e.ResetOffsets(ctx, "nope", equeue.ResetRequest{}) }, equeue.ErrGroupNotFound},
		{"unknown group (heartbeat)", func() error {
			_, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "nope", Member: "m"})
			return err
		}, equeue.ErrGroupNotFound},
		{"negative pull max", func() error { _, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: -1}); return err }, equeue.ErrInvalidArgument},
		{"bad filter", func() error { _, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: "a||"}); return err }, equeue.ErrInvalidFilter},
		{"commit negative offset", func() error {
			a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g2", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			if err != nil {
				return err
			}
			return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g2", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: -4}}})
		}, equeue.ErrInvalidArgument},
		{"reset beyond the end", func() error {
			return e.ResetOffsets(ctx, "g2", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{{Topic: "t"}: 99}})
		}, equeue.ErrInvalidArgument},
		{"reset of an unknown queue", func() error {
			return e.ResetOffsets(ctx, "g2", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: 7}: 0}})
		}, equeue.ErrQueueNotFound},
		{"join with bad model", func() error {
			_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g3", Member: "m", Model: 9, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			return err
		}, equeue.ErrInvalidArgument},
		{"join without subscriptions", func() error {
			_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g3", Member: "m"})
			return err
		}, equeue.ErrInvalidArgument},
		{"dead letters of a bad group name", func() error { _, err := e.DeadLetters(ctx, "a b", 0, 1); return err }, equeue.ErrInvalidName},
		{"retention with a canceled context", func() error {
			c, cancel := context.WithCancel(ctx)
			cancel()
			_, err := e.ApplyRetention(c, equeue.RetentionPolicy{})
			return err
		}, context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = c.call() })
			assert.ErrorIs(t, err, c.want)
		})
	}

	// After Close, everything answers ErrClosed.
	require.NoError(t, e.Close())
	after := map[string]func() error{
		"send":        func() error { _, err := p.Send(ctx, &equeue.Message{Topic: "t"}); return err },
		"pull":        func() error { _, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"}); return err },
		"join":        func() error { _, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m"}); return err },
		"groups":      func() error { _, err := e.Groups(ctx); return err },
		"retention":   func() error { _, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{}); return err },
		"add queues":  func() error { return e.AddQueues(ctx, "t", 1) },
		"dead letter": func() error { _, err := e.DeadLetters(ctx, "g", 0, 1); return err },
		"commit":      func() error { return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m"}) },
	}
	for name, call := range after {
		var err error
		require.NotPanics(t, func() { err = call() }, name)
		assert.ErrorIs(t, err, equeue.ErrClosed, name)
	}
}

// A message too large for the store's value limit, smaller than
// MaxMessageSize, is refused naming its place in the batch and the limit
// it passed, and nothing of the batch is stored.
func TestBadInput_TooLargeNamesTheMessageAndTheLimitItPassed(t *testing.T) {
	ctx := ctxT(t)
	e, err := equeue.Open("", &equeue.Options{Store: store.NewMemoryWithLimits(store.Limits{MaxValueSize: 600})})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	msgs := []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}, {Body: make([]byte, 700)}}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "message 2 ")
	assert.Contains(t, err.Error(), "limit 600")
	assert.Equal(t, int64(0), queueEnd(t, e, "t"))
}

// A nil *Engine or *Namespace given as the broker is a nil broker: the
// producer and consumer constructors refuse it with ErrInvalidArgument, as
// they refuse a nil interface, instead of returning a client that panics
// on its first call (or, for a Namespace, panicking at once). An engine
// left nil by a failed Open, passed on unchecked, is the common case.
func TestBadInput_NilEngineIsANilBroker(t *testing.T) {
	var failedOpen *equeue.Engine
	var nilView *equeue.Namespace
	ok := func(context.Context, *equeue.Message) error { return nil }
	subs := []equeue.Subscription{{Topic: "t"}}
	for name, b := range map[string]equeue.Broker{"engine": failedOpen, "namespace": nilView} {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = equeue.NewProducer(b, nil) })
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "NewProducer")
			require.NotPanics(t, func() {
				_, err = equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", Subscriptions: subs, Handler: ok})
			})
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "NewConsumer")
			require.NotPanics(t, func() {
				_, err = equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: subs})
			})
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "NewPullConsumer")
		})
	}
}

// Close on the nil engine a failed Open returns (a deferred Close before
// the error check) does not panic.
func TestBadInput_CloseOfTheEngineAFailedOpenReturned(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{MaxMessageSize: -1})
	require.Error(t, err)
	require.Nil(t, e)
	assert.NotPanics(t, func() { assert.ErrorIs(t, e.Close(), equeue.ErrInvalidArgument) })
}
