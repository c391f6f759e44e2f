package watermill_test

import (
	"fmt"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// publishN publishes n messages to topic and returns their UUIDs.
func publishN(t *testing.T, pub *eqwm.Publisher, topic string, n int) []string {
	t.Helper()
	var uuids []string
	for i := range n {
		msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
		uuids = append(uuids, msg.UUID)
		require.NoError(t, pub.Publish(topic, msg))
	}
	return uuids
}

// TestBroadcastingMemberResumes: a broadcasting subscription with a
// MemberID goes on, after its Subscriber was closed, from the offsets it
// committed: a later Subscriber with the same configuration receives what
// was published meanwhile, and nothing it had Ack'd.
func TestBroadcastingMemberResumes(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	opts := fastConsumer
	opts.Model = equeue.Broadcasting
	cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "b", MemberID: "node-1", Queues: 1, Consumer: opts}

	before := publishN(t, pub, "bc", 3)
	first, err := eqwm.NewSubscriber(cfg)
	require.NoError(t, err)
	ch, err := first.Subscribe(ctxT(t), "bc")
	require.NoError(t, err)
	for _, id := range before {
		m := receive(t, ch)
		assert.Equal(t, id, m.UUID)
		m.Ack()
	}
	require.NoError(t, first.Close()) // commits what was Ack'd
	assertClosed(t, ch)

	after := publishN(t, pub, "bc", 2)
	second := newSubscriber(t, cfg)
	ch, err = second.Subscribe(ctxT(t), "bc")
	require.NoError(t, err)
	var got []string
	for range after {
		m := receive(t, ch)
		got = append(got, m.UUID)
		m.Ack()
	}
	assert.Equal(t, after, got, "the restarted member goes on from its own offsets")
	assertNothing(t, ch, 200*time.Millisecond)
}

// TestBroadcastingMemberIDHeldByOneSubscription: while a broadcasting
// subscription holds its MemberID, a Subscribe to its group with the same
// MemberID fails with equeue.ErrMemberIDInUse, as the engine refuses a
// second live consumer with one member ID; once the first stopped, the ID
// is free and its successor goes on from its offsets. Members with other
// IDs each receive every message.
func TestBroadcastingMemberIDHeldByOneSubscription(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	opts := fastConsumer
	opts.Model = equeue.Broadcasting
	cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "b", MemberID: "node-1", Queues: 1, Consumer: opts}

	first, err := eqwm.NewSubscriber(cfg)
	require.NoError(t, err)
	ch1, err := first.Subscribe(ctxT(t), "bc")
	require.NoError(t, err)
	_, err = newSubscriber(t, cfg).Subscribe(ctxT(t), "bc")
	require.ErrorIs(t, err, equeue.ErrMemberIDInUse, "another Subscriber")
	_, err = first.Subscribe(ctxT(t), "bc")
	require.ErrorIs(t, err, equeue.ErrMemberIDInUse, "the same Subscriber")

	other := cfg
	other.MemberID = "node-2"
	ch2, err := newSubscriber(t, other).Subscribe(ctxT(t), "bc")
	require.NoError(t, err)

	sent := publishN(t, pub, "bc", 2)
	for _, ch := range []<-chan *message.Message{ch1, ch2} {
		for _, id := range sent {
			m := receive(t, ch)
			assert.Equal(t, id, m.UUID, "every member receives every message")
			m.Ack()
		}
	}
	require.NoError(t, first.Close())
	assertClosed(t, ch1)

	later := publishN(t, pub, "bc", 1)
	ch, err := newSubscriber(t, cfg).Subscribe(ctxT(t), "bc")
	require.NoError(t, err, "the ID is free once its subscription stopped")
	assert.Equal(t, later[0], receive(t, ch).UUID, "and its successor goes on from its offsets")
	assertNothing(t, ch, 200*time.Millisecond)
}
