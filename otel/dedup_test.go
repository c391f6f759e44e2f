package otel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// TestTracer_DuplicateOfADelayedSendRecordsNoDelivery: a send that the
// topic's dedup window absorbed stored nothing, so its span records no
// equeue.delayed event (it recorded one, with a delivery time worked out
// from the duplicate's own Delay, not when the original is delivered), and
// a duplicate batch is marked as a duplicate, as a single send is.
func TestTracer_DuplicateOfADelayedSendRecordsNoDelivery(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopicWith(ctx, "once", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	p := newProducer(t, e, tr)
	one := func(delay time.Duration) *equeue.Message {
		return &equeue.Message{Topic: "once", ID: "x", Body: []byte("x"), Delay: delay}
	}
	batch := func(delay time.Duration) []*equeue.Message {
		return []*equeue.Message{
			{Topic: "once", ID: "b1", Body: []byte("b1"), Delay: delay},
			{Topic: "once", ID: "b2", Body: []byte("b2"), Delay: delay},
		}
	}
	_, err := p.Send(ctx, one(time.Hour))
	require.NoError(t, err)
	again, err := p.Send(ctx, one(time.Minute))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	_, err = p.SendBatch(ctx, batch(time.Hour))
	require.NoError(t, err)
	againBatch, err := p.SendBatch(ctx, batch(time.Minute))
	require.NoError(t, err)
	require.True(t, againBatch.Duplicate)

	sends := spansNamed(rec, "send once")
	require.Len(t, sends, 4)
	for _, i := range []int{0, 2} {
		_, ok := event(sends[i], otel.EventDelayed)
		assert.True(t, ok, "send %d stored its messages for later", i)
		assert.Empty(t, attr(sends[i], string(otel.AttrDuplicate)), "send %d", i)
	}
	for _, i := range []int{1, 3} {
		_, ok := event(sends[i], otel.EventDelayed)
		assert.False(t, ok, "duplicate send %d stored nothing for later", i)
		assert.Equal(t, "true", attr(sends[i], string(otel.AttrDuplicate)), "duplicate send %d", i)
	}
}
