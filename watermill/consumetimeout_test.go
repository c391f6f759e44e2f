package watermill_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestUnorderedNeverAckedMessageFreesItsSlot: an unordered subscription of
// a clustering group waits at most Consumer.ConsumeTimeout for the Ack or
// Nack of a message it handed out. Then the message is delivered again,
// its context ends, and its place among the Concurrency messages handled
// at once goes to the next one. Before, the subscription waited for it
// without end: once Concurrency messages were never Ack'd, it delivered
// nothing more, not even those messages again.
func TestUnorderedNeverAckedMessageFreesItsSlot(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	o := fastConsumer
	o.ConsumeTimeout = 200 * time.Millisecond
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", Unordered: true, Concurrency: 1,
		NackResendDelay: time.Millisecond, Consumer: o})
	require.NoError(t, pub.Publish("lost", message.NewMessage("a", nil), message.NewMessage("b", nil)))
	ch, err := sub.Subscribe(ctxT(t), "lost")
	require.NoError(t, err)

	lost := receive(t, ch) // never Ack'd nor Nack'd
	require.Equal(t, "a", lost.UUID)
	got := map[string]string{}
	for len(got) < 2 {
		m := receive(t, ch)
		got[m.UUID] = m.Metadata.Get(eqwm.MetadataAttempt)
		m.Ack()
	}
	assert.Equal(t, map[string]string{"a": "1", "b": "0"}, got,
		"the next message and the lost one again, its first delivery counted as an attempt")
	select {
	case <-lost.Context().Done():
	default:
		t.Error("the context of the message given up on did not end")
	}
	assertNothing(t, ch, 200*time.Millisecond)
}

// TestOrderlyMessageIsNotGivenUpAtConsumeTimeout: the bound on the wait for
// an Ack or Nack is for unordered subscriptions only. An orderly one (the
// default, Unordered false) waits for its message as long as it takes, so
// a handler slower than Consumer.ConsumeTimeout keeps its message: it is
// not delivered again, and its context does not end. Before, the check
// read the Consumer's own Orderly field, which the Subscriber overrides,
// so orderly subscriptions gave their messages up too.
func TestOrderlyMessageIsNotGivenUpAtConsumeTimeout(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	o := fastConsumer
	o.ConsumeTimeout = 50 * time.Millisecond
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", NackResendDelay: time.Millisecond, Consumer: o})
	require.NoError(t, pub.Publish("slow", message.NewMessage("a", nil)))
	ch, err := sub.Subscribe(ctxT(t), "slow")
	require.NoError(t, err)

	m := receive(t, ch)
	require.Equal(t, "a", m.UUID)
	assertNothing(t, ch, 500*time.Millisecond)
	select {
	case <-m.Context().Done():
		t.Fatal("the context of a message still being handled ended")
	default:
	}
	m.Ack()
	assertNothing(t, ch, 200*time.Millisecond)
}
