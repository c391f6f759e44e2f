package watermill_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// nilUnmarshaler returns no message and no error.
type nilUnmarshaler struct{}

func (nilUnmarshaler) Unmarshal(*equeue.Message) (*message.Message, error) { return nil, nil }

// bareUnmarshaler returns messages whose Metadata is nil, as one that sets
// Metadata to the properties of a message that has none does.
type bareUnmarshaler struct{}

func (bareUnmarshaler) Unmarshal(m *equeue.Message) (*message.Message, error) {
	msg := message.NewMessage(m.Properties[eqwm.UUIDProperty], m.Body)
	msg.Metadata = nil
	return msg, nil
}

// panicHooks records whether a handler of the consumer panicked.
func panicHooks(panicked *atomic.Bool) []equeue.Hooks {
	return []equeue.Hooks{{AfterHandle: func(_ context.Context, _ *equeue.Message, err error, _ time.Duration) {
		if errors.Is(err, equeue.ErrHandlerPanic) {
			panicked.Store(true)
		}
	}}}
}

// TestUnmarshalNilDeadLetters: an Unmarshaler that returns no message and
// no error refuses the message, like one that returns an error: it is
// delivered again and goes to the dead letters after MaxAttempts. Before,
// the handler panicked on the nil message, and the consumer, which has no
// attempt limit of its own, retried it without end.
func TestUnmarshalNilDeadLetters(t *testing.T) {
	deadLettersAfterMaxAttempts(t, "nil", nilUnmarshaler{})
}

// deadLettersAfterMaxAttempts publishes one message to topic and
// subscribes with u, which refuses it: the message goes to the group's
// dead letters after MaxAttempts (2), nothing reaches the subscription,
// and no handler panics.
func deadLettersAfterMaxAttempts(t *testing.T, topic string, u eqwm.Unmarshaler) {
	t.Helper()
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	require.NoError(t, pub.Publish(topic, message.NewMessage(wm.NewUUID(), []byte("x"))))
	var panicked atomic.Bool
	opts := fastConsumer
	opts.Hooks = panicHooks(&panicked)
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc", MaxAttempts: 2,
		NackResendDelay: time.Millisecond, Unmarshaler: u, Consumer: opts})
	ch, err := sub.Subscribe(ctxT(t), topic)
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return stored(t, e, equeue.DLQTopic("svc")) == 1 }, 10*time.Second, 5*time.Millisecond,
		"not dead-lettered after MaxAttempts")
	assert.False(t, panicked.Load(), "a handler panicked on what the Unmarshaler did")
	assertNothing(t, ch, 100*time.Millisecond)
}

// TestUnmarshalNilMetadata: a message whose Unmarshaler left its Metadata
// nil is delivered with the equeue_* keys set, instead of the handler
// panicking on the nil map (and the message being retried without end).
func TestUnmarshalNilMetadata(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	require.NoError(t, pub.Publish("bare", msg))
	var panicked atomic.Bool
	opts := fastConsumer
	opts.Hooks = panicHooks(&panicked)
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, Unmarshaler: bareUnmarshaler{}, Consumer: opts})
	ch, err := sub.Subscribe(ctxT(t), "bare")
	require.NoError(t, err)
	select {
	case got := <-ch:
		assert.Equal(t, msg.UUID, got.UUID)
		assert.Equal(t, "bare", got.Metadata.Get(eqwm.MetadataTopic))
		assert.Equal(t, "0", got.Metadata.Get(eqwm.MetadataOffset))
		got.Ack()
	case <-time.After(10 * time.Second):
		t.Errorf("not delivered within 10s (handler panicked: %v)", panicked.Load())
	}
	assert.False(t, panicked.Load(), "the handler panicked on the nil Metadata")
}

// panickyUnmarshaler panics on every message.
type panickyUnmarshaler struct{}

func (panickyUnmarshaler) Unmarshal(*equeue.Message) (*message.Message, error) {
	panic("cannot read this")
}

// TestUnmarshalPanicDeadLetters: an Unmarshaler that panics refuses the
// message as one that returns an error does: it goes to the dead letters
// after MaxAttempts. Before, the panic reached the consumer, which has no
// attempt limit of its own, and the message was delivered without end.
func TestUnmarshalPanicDeadLetters(t *testing.T) {
	deadLettersAfterMaxAttempts(t, "panicky", panickyUnmarshaler{})
}
