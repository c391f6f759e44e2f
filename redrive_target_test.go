package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// handled records what a handler saw, in order.
type handled struct {
	mu   sync.Mutex
	msgs []equeue.Message
}

func (h *handled) add(m *equeue.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, *m)
}

func (h *handled) snapshot() []equeue.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]equeue.Message(nil), h.msgs...)
}

// bodies returns the bodies handled, in order.
func (h *handled) bodies() []string {
	var out []string
	for _, m := range h.snapshot() {
		out = append(out, string(m.Body))
	}
	return out
}

// A fan-out topic: groups billing and shipping both consume orders.
// Billing dead-letters order x; redriving billing's dead letters hands x
// to billing again, as it saw it (topic, queue, offset, ID, body,
// properties, a fresh attempt count), and never to shipping, which
// handled it already.
func TestRedrive_FanOutReachesOnlyTheGroup(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	var billing, shipping handled
	var failing sync.Once
	startConsumer(t, e, equeue.ConsumerOptions{Group: "billing", ID: "b", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			billing.add(m)
			fail := false
			failing.Do(func() { fail = true })
			if fail {
				return equeue.DeadLetter(errors.New("card declined"))
			}
			return nil
		}})
	// Orderly: shipping handles its queue in offset order, so once it has
	// handled a later marker it has handled everything before it.
	startConsumer(t, e, equeue.ConsumerOptions{Group: "shipping", ID: "s", Orderly: true, Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Handler: func(_ context.Context, m *equeue.Message) error { shipping.add(m); return nil }})
	p := newProducer(t, e, nil)
	x, err := p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{"o1"}, Tag: "new", Body: []byte("x"), Properties: map[string]string{"k": "v"}})
	require.NoError(t, err)
	var dls []equeue.DLQEntry
	eventually(t, waitLong, func() bool {
		dls, err = e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{})
		require.NoError(t, err)
		return len(dls) == 1
	}, "billing dead-lettered x")

	n, err := e.Redrive(ctx, "billing", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	eventually(t, waitLong, func() bool { return len(billing.snapshot()) == 2 }, "billing handles the redriven x")
	_, err = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("marker")})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool {
		b := shipping.bodies()
		return len(b) > 0 && b[len(b)-1] == "marker"
	}, "shipping handled the marker")
	assert.Equal(t, []string{"x", "marker"}, shipping.bodies(), "shipping handled x once")

	got := billing.snapshot()
	first, again := got[0], got[1]
	assert.Equal(t, "orders", again.Topic)
	assert.Equal(t, x.Queue, again.Queue)
	assert.Equal(t, x.Offset, again.Offset)
	assert.Equal(t, x.ID, again.ID)
	assert.Equal(t, "x", string(again.Body))
	assert.Equal(t, "new", again.Tag)
	assert.Equal(t, []string{"o1"}, again.Keys)
	assert.Equal(t, map[string]string{"k": "v"}, again.Properties)
	assert.Equal(t, first.Attempt, again.Attempt, "a fresh retry: its attempts count from 0 again")
	assert.Zero(t, again.Attempt)
}

// A redriven dead letter is a fresh retry: its group gets MaxAttempts new
// runs of it before it is dead-lettered again, and the handler sees the
// attempts count from 0 again.
func TestRedrive_GivesMaxAttemptsAgain(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var seen handled
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		MaxAttempts: 3, RetryTopicDelays: []time.Duration{time.Millisecond},
		Handler: func(_ context.Context, m *equeue.Message) error { seen.add(m); return errors.New("still down") }})
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	deadLetters := func(n int) []equeue.DLQEntry {
		var dls []equeue.DLQEntry
		eventually(t, waitLong, func() bool {
			dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			return len(dls) == n
		}, "%d dead letters", n)
		return dls
	}
	require.Equal(t, 3, deadLetters(1)[0].Attempts)

	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	dls := deadLetters(2)
	assert.Equal(t, 3, dls[1].Attempts, "three new runs, not one")
	assert.Equal(t, "t", dls[1].Message.Topic, "the dead letter of the redriven copy names the origin")
	assert.Equal(t, dls[0].Message.Offset, dls[1].Message.Offset)
	var attempts []int
	for _, m := range seen.snapshot() {
		attempts = append(attempts, m.Attempt)
	}
	assert.Equal(t, []int{0, 1, 2, 0, 1, 2}, attempts)
}

// A group whose members do not consume its retry topic (broadcasting: each
// member retries locally; orderly: retries in place) has nowhere to be
// redriven but the topic: without ToTopic its redrive is refused with
// ErrInvalidArgument and marks nothing; with ToTopic it is sent to the
// topic.
func TestRedrive_WithoutARetryTopicNeedsToTopic(t *testing.T) {
	for _, o := range []equeue.ConsumerOptions{{Model: equeue.Broadcasting}, {Orderly: true}} {
		t.Run(fmt.Sprintf("broadcasting=%v,orderly=%v", o.Model == equeue.Broadcasting, o.Orderly), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			o.Group, o.ID, o.Subscriptions = "g", "c", []equeue.Subscription{{Topic: "t"}}
			o.Handler = func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }
			c := startConsumer(t, e, o)
			_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool {
				dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				return len(dls) == 1
			}, "one dead letter")
			require.NoError(t, c.Close())

			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.ErrorIs(t, err, equeue.ErrInvalidArgument)
			assert.Contains(t, err.Error(), "ToTopic")
			assert.Zero(t, n)
			dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			assert.False(t, dls[0].Redriven, "a refused redrive marks nothing")
			assert.Equal(t, int64(1), queueEnd(t, e, "t"))

			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, []string{"x", "x"}, queueBodies(t, e, "t", 0), "back on its topic")
		})
	}
}
