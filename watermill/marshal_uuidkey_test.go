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

// TestMarshalRefusesTheUUIDPropertyAsMetadata: a metadata entry named
// UUIDProperty would share the property that carries the message UUID.
// Marshal used to overwrite it with the UUID, so its value was lost
// without a word (and on receipt the key is never metadata). It is
// refused with ErrInvalidArgument instead, and Publish stores nothing of
// such a message; other metadata and the UUID still round-trip.
func TestMarshalRefusesTheUUIDPropertyAsMetadata(t *testing.T) {
	var d eqwm.DefaultMarshaler
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	msg.Metadata.Set(eqwm.UUIDProperty, "mine")
	msg.Metadata.Set("k", "v")
	_, err := d.Marshal("jobs", msg)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.ErrorContains(t, err, eqwm.UUIDProperty)

	ok := message.NewMessage(wm.NewUUID(), []byte("y"))
	ok.Metadata.Set("k", "v")
	em, err := d.Marshal("jobs", ok)
	require.NoError(t, err)
	back, err := d.Unmarshal(em)
	require.NoError(t, err)
	assert.Equal(t, ok.UUID, back.UUID)
	assert.Equal(t, message.Metadata{"k": "v"}, back.Metadata)

	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "jobs", 1))
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	require.ErrorIs(t, pub.Publish("jobs", msg), equeue.ErrInvalidArgument)
	st, err := e.Topic(ctxT(t), "jobs")
	require.NoError(t, err)
	assert.Zero(t, st.Queues[0].MaxOffset, "nothing was sent")
}
