package watermill_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// errNoAdmin stands for a broker's refusal to create a topic, as a remote
// client whose token has the produce or consume right but not admin gets.
var errNoAdmin = errors.New("permission denied: creating topics needs the admin right")

// noCreateRight is a Broker that may use topics but not create them.
type noCreateRight struct {
	equeue.Broker
	creates atomic.Int32
}

func (b *noCreateRight) CreateTopic(context.Context, string, int) error {
	b.creates.Add(1)
	return errNoAdmin
}

// TestNoCreateRight: a Publisher or Subscriber whose broker refuses to
// create topics still uses the topics that exist, and asks to create a
// topic again only until it was seen to exist; on a missing topic the
// refusal is part of the error.
func TestNoCreateRight(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "jobs", 2))
	b := &noCreateRight{Broker: e}
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: b})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: b, ConsumerGroup: "g"})

	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	require.NoError(t, pub.Publish("jobs", msg))
	require.NoError(t, pub.Publish("jobs", message.NewMessage(wm.NewUUID(), []byte("y"))))
	ch, err := sub.Subscribe(ctxT(t), "jobs")
	require.NoError(t, err)
	got := receive(t, ch)
	assert.Contains(t, []string{"x", "y"}, string(got.Payload))
	got.Ack()
	receive(t, ch).Ack()
	assert.EqualValues(t, 2, b.creates.Load(), "one refused creation each, none once the topic was used")

	err = pub.Publish("missing", message.NewMessage(wm.NewUUID(), nil))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.ErrorIs(t, err, errNoAdmin, "why the topic was not created")
	_, err = sub.Subscribe(ctxT(t), "missing")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.ErrorIs(t, err, errNoAdmin)
}
