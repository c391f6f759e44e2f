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

func TestTopicLimits_UnconsumedOverride(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	topics := map[string]equeue.UnconsumedPolicy{"keep": equeue.UnconsumedKeep, "drop": equeue.UnconsumedDrop, "plain": equeue.UnconsumedDefault}
	var subs []equeue.Subscription
	for name, p := range topics {
		require.NoError(t, e.CreateTopicWith(ctx, name, equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{Unconsumed: p}}))
		fillQueue(t, e, name, 10)
		subs = append(subs, equeue.Subscription{Topic: name})
	}
	// A group subscribed to every topic that consumes nothing: all ten
	// messages of each are unconsumed.
	held, release := make(chan struct{}, 64), make(chan struct{})
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: subs, From: equeue.ConsumeFromEarliest,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			select {
			case held <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
			case <-release:
			}
			return errors.New("held")
		}, HandoffTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { close(release) }) // before the consumer's Close
	eventually(t, 10*time.Second, func() bool { return len(held) >= 3 }, "the group holds a message of each topic")

	_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
	require.NoError(t, err)
	assert.Equal(t, int64(10), stored(t, e, "keep"), "keep: as the engine's policy")
	assert.Equal(t, int64(10), stored(t, e, "plain"), "default: the engine keeps unconsumed messages")
	assert.Equal(t, int64(0), stored(t, e, "drop"), "drop overrides the engine's KeepUnconsumed")

	fillQueue(t, e, "drop", 10)
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.NoError(t, err)
	assert.Equal(t, int64(10), stored(t, e, "keep"), "keep overrides an engine that deletes unconsumed messages")
	assert.Equal(t, int64(0), stored(t, e, "plain"))
	assert.Equal(t, int64(0), stored(t, e, "drop"))
}

func TestUnconsumedPolicy_Parse(t *testing.T) {
	for _, s := range []string{"default", "keep", "drop"} {
		p, err := equeue.ParseUnconsumedPolicy(s)
		require.NoError(t, err)
		assert.Equal(t, s, p.String())
	}
	_, err := equeue.ParseUnconsumedPolicy("sometimes")
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.ErrorIs(t, equeue.TopicLimits{Unconsumed: 9}.Validate(), equeue.ErrInvalidArgument)
}

// TestTopicLimits_BytesAndUnconsumedTravel: MaxBytes and Unconsumed are
// set and read back the same over both transports, and stored.
func TestTopicLimits_BytesAndUnconsumedTravel(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		e, eb := openOver(t, transport, "memory", nil)
		a := eb.(limitsAdmin)
		l := equeue.TopicLimits{MaxBytes: 1 << 20, Overflow: equeue.OverflowReject, Unconsumed: equeue.UnconsumedKeep}
		require.NoError(t, a.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: l}))
		info, err := a.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, l, info.Limits)
		l2 := equeue.TopicLimits{MaxBytes: 2 << 20, Unconsumed: equeue.UnconsumedDrop}
		require.NoError(t, a.SetTopicLimits(ctx, "t", l2))
		info, err = e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, l2, info.Limits)
		assert.Equal(t, "max-bytes=2097152 overflow=drop-oldest unconsumed=drop", info.Limits.String())
	})
}
