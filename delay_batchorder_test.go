package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDelay_BatchIsDeliveredInItsOrder: SendBatch stores a batch in one
// queue and in order. A delayed batch whose delivery times go back, by
// Delay or by DeliverAt, was accepted and each message moved at its own
// time, so a later message of the batch landed ahead of an earlier one.
// Such a batch is refused with ErrInvalidDelay and stores nothing; one
// whose times do not go back is delivered in its order.
func TestDelay_BatchIsDeliveredInItsOrder(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	at := time.Now().Add(time.Minute)
	for name, batch := range map[string][]*equeue.Message{
		"delays going back": {
			{Topic: "t", Body: []byte("first"), Delay: 600 * time.Millisecond},
			{Topic: "t", Body: []byte("second"), Delay: 100 * time.Millisecond},
		},
		"delivery times going back": {
			{Topic: "t", Body: []byte("first"), DeliverAt: at},
			{Topic: "t", Body: []byte("second"), DeliverAt: at.Add(time.Second)},
			{Topic: "t", Body: []byte("third"), DeliverAt: at.Add(-time.Second)},
		},
	} {
		_, err := p.SendBatch(ctx, batch)
		assert.ErrorIs(t, err, equeue.ErrInvalidDelay, name)
	}
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, info.Pending, "nothing of a refused batch is stored")

	r, err := p.SendBatch(ctx, []*equeue.Message{
		{Topic: "t", Body: []byte("first"), Delay: 100 * time.Millisecond},
		{Topic: "t", Body: []byte("second"), Delay: 400 * time.Millisecond},
		{Topic: "t", Body: []byte("third"), DeliverAt: time.Now().Add(time.Second)},
	})
	require.NoError(t, err, "delivery times that do not go back")
	assert.True(t, r.Delayed)
	eventually(t, 10*time.Second, func() bool { return len(queueBodies(t, e, "t", 0)) == 3 }, "all delivered")
	assert.Equal(t, []string{"first", "second", "third"}, queueBodies(t, e, "t", 0), "in the batch's order")
}
