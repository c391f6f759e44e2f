package watermill_test

import (
	"testing"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// nilMarshaler returns no message and no error.
type nilMarshaler struct{}

func (nilMarshaler) Marshal(string, *message.Message) (*equeue.Message, error) { return nil, nil }

// TestPublishNilIsRefused: a nil message, or a Marshaler that returns no
// message, is refused with ErrInvalidArgument instead of a panic, and
// nothing of the call is sent.
func TestPublishNilIsRefused(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "jobs", 1))
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	err := pub.Publish("jobs", message.NewMessage(wm.NewUUID(), []byte("x")), nil)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.ErrorIs(t, pub.Publish("jobs", nil), equeue.ErrInvalidArgument)

	bad := newPublisher(t, eqwm.PublisherConfig{Broker: e, Marshaler: nilMarshaler{}})
	assert.ErrorIs(t, bad.Publish("jobs", message.NewMessage(wm.NewUUID(), []byte("y"))), equeue.ErrInvalidArgument)

	st, err := e.Topic(ctxT(t), "jobs")
	require.NoError(t, err)
	var n int64
	for _, q := range st.Queues {
		n += q.MaxOffset - q.MinOffset
	}
	assert.Zero(t, n, "nothing was sent")
}
