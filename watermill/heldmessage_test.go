package watermill_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestUnorderedBroadcastingHeldMessageStallsItsQueue: in an unordered
// broadcasting subscription a message handed out and never Ack'd nor
// Nack'd holds more than one of its Concurrency places: its queue's
// pulling pauses once Consumer.MaxSpan later messages are cached past it,
// so the subscription hands out nothing more of that queue until the
// message is Ack'd (here) or the subscription stops. The documentation
// said only that it held one of the Concurrency places.
func TestUnorderedBroadcastingHeldMessageStallsItsQueue(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	for i := range 10 {
		require.NoError(t, pub.Publish("held", message.NewMessage(fmt.Sprint(i), nil)))
	}
	o := fastConsumer
	o.Model = equeue.Broadcasting
	o.MaxSpan = 3
	o.PullBatch = 1
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "bc", MemberID: "m", Unordered: true,
		Concurrency: 16, Consumer: o})
	ch, err := sub.Subscribe(ctxT(t), "held")
	require.NoError(t, err)

	// The first MaxSpan+1 messages are handed out concurrently, in any
	// order: hold the first of the queue, "0", Ack the others.
	var held *message.Message
	got := []string{}
	for range 4 {
		m := receive(t, ch)
		if m.UUID == "0" {
			held = m
			continue
		}
		got = append(got, m.UUID)
		m.Ack()
	}
	require.NotNil(t, held, "the first message is handed out with the three after it")
	assert.ElementsMatch(t, []string{"1", "2", "3"}, got, "the messages within MaxSpan of the held one")
	assertNothing(t, ch, 500*time.Millisecond)
	held.Ack()
	for range 6 {
		m := receive(t, ch)
		got = append(got, m.UUID)
		m.Ack()
	}
	assert.ElementsMatch(t, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, got, "the queue goes on once the held message is Ack'd")
}

// TestOrderlyHeldMessageGoesWithItsQueue: in a clustering group, a message
// an orderly subscription handed out and never Ack'd nor Nack'd is held
// until the subscription stops or its queue is handed over to another
// member: after Consumer.HandoffTimeout its context ends and the new owner
// gets it again, its first delivery counted as an attempt.
func TestOrderlyHeldMessageGoesWithItsQueue(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "handed", 2))
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	o := fastConsumer
	o.HandoffTimeout = 100 * time.Millisecond
	subA := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", Consumer: o})
	chA, err := subA.Subscribe(ctxT(t), "handed")
	require.NoError(t, err)
	// Spread round robin: one message in each queue, both held by A.
	require.NoError(t, pub.Publish("handed", message.NewMessage("a", nil), message.NewMessage("b", nil)))
	held := map[string]*message.Message{}
	for range 2 {
		m := receive(t, chA)
		held[m.UUID] = m
	}
	require.Len(t, held, 2)

	subB := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", Consumer: o})
	chB, err := subB.Subscribe(ctxT(t), "handed")
	require.NoError(t, err)
	m := receive(t, chB)
	require.Contains(t, held, m.UUID)
	assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt))
	select {
	case <-held[m.UUID].Context().Done():
	default:
		t.Error("the context of the message whose queue was handed over did not end")
	}
	m.Ack()
	for _, h := range held {
		h.Ack()
	}
}
