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

// TestSubscriberCloseTwiceConcurrently: a Close called while another is
// still stopping the subscriptions returns, like the first, only once
// every channel is closed.
func TestSubscriberCloseTwiceConcurrently(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	// The first Close waits this long for the message handed out below,
	// which is never Ack'd: the second Close is called meanwhile.
	o := fastConsumer
	o.ShutdownTimeout = 2 * eqwm.DefaultShutdownTimeout
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, Consumer: o})
	ch, err := sub.Subscribe(ctxT(t), "close2")
	require.NoError(t, err)
	require.NoError(t, pub.Publish("close2", message.NewMessage(wm.NewUUID(), []byte("x"))))
	receive(t, ch) // handed out, not Ack'd

	first := make(chan error, 1)
	go func() { first <- sub.Close() }()
	// Once Subscribe is refused, the first Close has begun.
	for {
		if _, err := sub.Subscribe(ctxT(t), "close2"); errors.Is(err, eqwm.ErrSubscriberClosed) {
			break
		}
	}
	require.NoError(t, sub.Close())
	select {
	case _, ok := <-ch:
		assert.False(t, ok, "a message after Close returned")
	default:
		t.Error("the second Close returned before the channel was closed")
	}
	require.NoError(t, <-first)
}

// blockingMarshaler holds the Marshal of a message whose UUID is block
// until release is closed.
type blockingMarshaler struct {
	block   string
	entered chan struct{}
	release chan struct{}
}

func (b blockingMarshaler) Marshal(topic string, msg *message.Message) (*equeue.Message, error) {
	if msg.UUID == b.block {
		close(b.entered)
		<-b.release
	}
	return eqwm.DefaultMarshaler{}.Marshal(topic, msg)
}

// countingBroker counts the appends that returned; it creates topics
// as its Broker does.
type countingBroker struct {
	equeue.Broker
	appended atomic.Int32
}

func (b *countingBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	defer b.appended.Add(1)
	return b.Broker.Append(ctx, req)
}

func (b *countingBroker) CreateTopic(ctx context.Context, name string, queues int) error {
	return b.Broker.(eqwm.TopicCreator).CreateTopic(ctx, name, queues)
}

// TestPublisherCloseTwiceConcurrently: a Close called while another waits
// for a Publish in progress waits for that Publish too.
func TestPublisherCloseTwiceConcurrently(t *testing.T) {
	b := &countingBroker{Broker: openEngine(t)}
	m := blockingMarshaler{block: wm.NewUUID(), entered: make(chan struct{}), release: make(chan struct{})}
	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: b, Marshaler: m})
	require.NoError(t, err)

	published := make(chan error, 1)
	go func() { published <- pub.Publish("pclose2", message.NewMessage(m.block, []byte("x"))) }()
	<-m.entered
	first := make(chan error, 1)
	go func() { first <- pub.Close() }()
	// Once Publish is refused, the first Close has begun.
	for {
		if err := pub.Publish("other", message.NewMessage(wm.NewUUID(), nil)); errors.Is(err, eqwm.ErrPublisherClosed) {
			break
		}
	}
	before := b.appended.Load()
	// Let the held Publish go on a little later, while the second Close
	// is (or should be) waiting for it.
	go func() {
		time.Sleep(200 * time.Millisecond)
		close(m.release)
	}()
	require.NoError(t, pub.Close())
	assert.Equal(t, before+1, b.appended.Load(), "the second Close returned before the Publish in progress stored its message")
	require.NoError(t, <-published)
	require.NoError(t, <-first)
}
