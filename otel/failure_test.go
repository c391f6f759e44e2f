package otel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/otel"
	"github.com/equeue-go/equeue/store"
)

// failedMoves wraps a MoveObserver and counts moves that failed.
type failedMoves struct {
	equeue.MoveObserver
	failed atomic.Int32
}

func (f *failedMoves) ObserveMove(ctx context.Context, ev equeue.MoveEvent) {
	if ev.Err != nil {
		f.failed.Add(1)
	}
	f.MoveObserver.ObserveMove(ctx, ev)
}

// TestTracer_SendBackFails injects a store failure into the send-back of a
// failed message: the broker's retry span records the error, the attempt's
// span says the message is retried locally and why, and the local retry is
// still in the send's trace.
func TestTracer_SendBackFails(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	fs := faultstore.New(store.NewMemory())
	obs := &failedMoves{MoveObserver: tr.Observer()}
	var failing atomic.Bool
	fs.OnWrite(func(*store.Batch) error {
		if failing.Load() && obs.failed.Load() == 0 {
			return faultstore.ErrInjected
		}
		return nil
	})
	e, err := equeue.Open("", &equeue.Options{Store: fs, Observer: obs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		SendBackRetryDelay: 10 * time.Millisecond, Hooks: []equeue.Hooks{tr.Hooks()},
		Handler: func(_ context.Context, m *equeue.Message) error {
			if m.Attempt == 0 {
				failing.Store(true) // every write fails until the send-back did
				return errors.New("first attempt fails")
			}
			return nil
		}})
	_, err = newProducer(t, e, tr).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process t")) == 2 }, "the local retry")

	send := spansNamed(rec, "send t")[0]
	procs := spansNamed(rec, "process t")
	first, second := procs[0], procs[1]
	assert.Equal(t, "retry-local", attr(first, "messaging.equeue.outcome"))
	ev, ok := event(first, otel.EventRetryLocal)
	require.True(t, ok, "the attempt records the local retry")
	assert.Contains(t, eventAttr(ev, "error.message"), faultstore.ErrInjected.Error())
	assert.Equal(t, "0.01", eventAttr(ev, "messaging.equeue.retry_delay_seconds"))

	stored := spansNamed(rec, "retry g")
	require.NotEmpty(t, stored)
	assert.Equal(t, codes.Error, stored[0].Status().Code, "the broker's span records the failed store")
	assert.Equal(t, send.SpanContext().TraceID(), stored[0].SpanContext().TraceID())

	assert.Equal(t, send.SpanContext().TraceID(), second.SpanContext().TraceID())
	assert.Equal(t, "1", attr(second, "messaging.equeue.attempt"))
	assert.Equal(t, "handled", attr(second, "messaging.equeue.outcome"))
}

// TestTracer_BeforeSendPanicEndsTheSendSpan: a BeforeSend hook that panics
// on the caller's goroutine, after the tracer started the send's span,
// left the span open (never exported); it now ends, with the panic as its
// error, and the panic reaches the caller.
func TestTracer_BeforeSendPanicEndsTheSendSpan(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{
		tr.Hooks(),
		{BeforeSend: func(context.Context, *equeue.Message) { panic("boom") }},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })

	assert.PanicsWithValue(t, "boom", func() { _, _ = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}) })
	spans := spansNamed(rec, "send t")
	require.Len(t, spans, 1, "the send's span ended")
	assert.Equal(t, codes.Error, spans[0].Status().Code)
	assert.Contains(t, spans[0].Status().Description, equeue.ErrHookPanic.Error())
	assert.Contains(t, spans[0].Status().Description, "boom")
}
