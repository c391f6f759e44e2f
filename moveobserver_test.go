package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

type moveRecorder struct {
	mu  sync.Mutex
	evs []equeue.MoveEvent
}

func (r *moveRecorder) ObservePull(string, int, time.Duration, int) {}

func (r *moveRecorder) ObserveMove(_ context.Context, ev equeue.MoveEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *moveRecorder) events() []equeue.MoveEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]equeue.MoveEvent(nil), r.evs...)
}

// TestMoveObserver_RetryDeadLetterAndDelay: an Observer that is a
// MoveObserver hears of each message the engine stores anew, with the
// message as stored and its properties.
func TestMoveObserver_RetryDeadLetterAndDelay(t *testing.T) {
	ctx := ctxT(t)
	rec := &moveRecorder{}
	e, _ := openEngine(t, "memory", &equeue.Options{Observer: rec})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryDelays: []time.Duration{time.Millisecond}, MaxAttempts: 2,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if string(m.Body) == "fail" {
				return errors.New("no")
			}
			return nil
		}})
	p := newProducer(t, e, nil)
	props := map[string]string{"traceparent": "x"}
	before := time.Now()
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("fail"), Properties: props})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("later"), Properties: props, Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	// The retry, its delayed redelivery, the dead letter and the delayed send.
	eventually(t, 20*time.Second, func() bool { return len(rec.events()) == 4 }, "four moves")

	byKind := map[equeue.MoveKind]equeue.MoveEvent{}
	var retryDue equeue.MoveEvent
	for _, ev := range rec.events() {
		if ev.Kind == equeue.MoveDelayDue && ev.Message.Topic == equeue.RetryTopic("g") {
			retryDue = ev
		} else {
			byKind[ev.Kind] = ev
		}
		assert.NoError(t, ev.Err)
		assert.Equal(t, props, ev.Message.Properties, "%v keeps the properties", ev.Kind)
		assert.False(t, ev.Start.Before(before))
	}
	r := byKind[equeue.MoveRetry]
	assert.Equal(t, "g", r.Group)
	assert.Equal(t, equeue.RetryTopic("g"), r.Message.Topic)
	assert.Equal(t, 1, r.Message.Attempt)
	d := byKind[equeue.MoveDeadLetter]
	assert.Equal(t, equeue.DLQTopic("g"), d.Message.Topic)
	assert.Equal(t, 2, d.Message.Attempt)
	due := byKind[equeue.MoveDelayDue]
	assert.Equal(t, "t", due.Message.Topic)
	assert.Equal(t, []byte("later"), due.Message.Body)
	assert.Equal(t, int64(1), due.Message.Offset, "the offset it was moved to")
	assert.Equal(t, "delay-due", equeue.MoveDelayDue.String())
	assert.Equal(t, []byte("fail"), retryDue.Message.Body, "a retry becoming due is a delayed move too")
}
