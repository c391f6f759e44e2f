package otel_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// TestTracer_SendToHandler follows one message, in-process and over
// remote: the request span, the send span, the process span and a span the
// handler starts are one trace, parent to child, with the messaging
// attributes.
func TestTracer_SendToHandler(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		tp, rec := recorder(t)
		tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
		e := openEngine(t, nil)
		b := brokerOver(t, e, transport)
		require.NoError(t, e.CreateTopic(ctx, "orders", 2))
		handled := make(chan *equeue.Message, 1)
		startConsumer(t, b, equeue.ConsumerOptions{Group: "billing", ID: "worker-1", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
			Hooks: []equeue.Hooks{tr.Hooks()},
			Handler: func(ctx context.Context, m *equeue.Message) error {
				_, span := tp.Tracer("app").Start(ctx, "charge card")
				span.End()
				handled <- m
				return nil
			}})
		p := newProducer(t, b, tr)

		rctx, req := tp.Tracer("app").Start(ctx, "POST /orders")
		props := map[string]string{"user": "u1"}
		res, err := p.Send(rctx, &equeue.Message{Topic: "orders", Tag: "new", Body: []byte("order-1"), Properties: props})
		require.NoError(t, err)
		req.End()
		assert.Equal(t, map[string]string{"user": "u1"}, props, "the caller's properties map is not written into")

		var got *equeue.Message
		select {
		case got = <-handled:
		case <-ctx.Done():
			t.Fatal("message not handled")
		}
		assert.Equal(t, "u1", got.Properties["user"])
		assert.NotEmpty(t, got.Properties["traceparent"], "the trace context travels in the properties")
		eventually(t, 10*time.Second, func() bool { return len(spansNamed(rec, "process orders")) == 1 }, "the process span")

		send := spansNamed(rec, "send orders")
		require.Len(t, send, 1)
		proc := spansNamed(rec, "process orders")[0]
		charge := spansNamed(rec, "charge card")
		require.Len(t, charge, 1)
		tid := req.SpanContext().TraceID()
		for _, s := range []sdktrace.ReadOnlySpan{send[0], proc, charge[0]} {
			assert.Equal(t, tid, s.SpanContext().TraceID(), "%s is in the request's trace", s.Name())
		}
		assert.Equal(t, req.SpanContext().SpanID(), send[0].Parent().SpanID())
		assert.Equal(t, send[0].SpanContext().SpanID(), proc.Parent().SpanID(), "the process span is the send span's child")
		assert.Equal(t, proc.SpanContext().SpanID(), charge[0].Parent().SpanID(), "the handler runs in the process span")

		assert.Equal(t, trace.SpanKindProducer, send[0].SpanKind())
		assert.Equal(t, trace.SpanKindConsumer, proc.SpanKind())
		for k, v := range map[string]string{
			"messaging.system": "equeue", "messaging.operation.type": "send", "messaging.destination.name": "orders",
			"messaging.destination.partition.id": strconv.Itoa(res.Queue), "messaging.message.id": res.ID,
			"messaging.equeue.offset": strconv.FormatInt(res.Offset, 10), "messaging.equeue.tag": "new",
			"messaging.message.body.size": "7",
		} {
			assert.Equal(t, v, attr(send[0], k), "send span %s", k)
		}
		for k, v := range map[string]string{
			"messaging.system": "equeue", "messaging.operation.type": "process", "messaging.destination.name": "orders",
			"messaging.destination.partition.id": strconv.Itoa(res.Queue), "messaging.message.id": res.ID,
			"messaging.consumer.group.name": "billing", "messaging.client.id": "worker-1",
			"messaging.equeue.offset": strconv.FormatInt(res.Offset, 10), "messaging.equeue.attempt": "0",
			"messaging.equeue.outcome": "handled",
		} {
			assert.Equal(t, v, attr(proc, k), "process span %s", k)
		}
		assert.Equal(t, codes.Unset, proc.Status().Code)
	})
}

// TestTracer_RetryKeepsTrace fails the first attempt: the second attempt,
// redelivered through the retry topic, is in the same trace with attempt
// 1, and the first attempt's span records the error and the retry.
func TestTracer_RetryKeepsTrace(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		tp, rec := recorder(t)
		tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
		e := openEngine(t, &equeue.Options{Observer: tr.Observer()})
		b := brokerOver(t, e, transport)
		require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
		startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
			RetryTopicDelays: []time.Duration{20 * time.Millisecond}, Hooks: []equeue.Hooks{tr.Hooks()},
			Handler: func(_ context.Context, m *equeue.Message) error {
				if m.Attempt == 0 {
					return errors.New("card declined")
				}
				return nil
			}})
		_, err := newProducer(t, b, tr).Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("j")})
		require.NoError(t, err)
		eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process jobs")) == 2 }, "two attempts")

		send := spansNamed(rec, "send jobs")[0]
		procs := spansNamed(rec, "process jobs")
		first, second := procs[0], procs[1]
		for i, p := range procs {
			assert.Equal(t, send.SpanContext().TraceID(), p.SpanContext().TraceID(), "attempt %d in the send's trace", i)
			assert.Equal(t, send.SpanContext().SpanID(), p.Parent().SpanID())
			assert.Equal(t, strconv.Itoa(i), attr(p, "messaging.equeue.attempt"))
			assert.Equal(t, "jobs", attr(p, "messaging.destination.name"), "the retry shows its original topic")
		}
		assert.Equal(t, codes.Error, first.Status().Code)
		assert.Equal(t, "retry", attr(first, "messaging.equeue.outcome"))
		ev, ok := event(first, otel.EventRetry)
		require.True(t, ok, "the failed attempt records the retry")
		assert.Equal(t, "1", eventAttr(ev, "messaging.equeue.attempts"))
		assert.Equal(t, "0.02", eventAttr(ev, "messaging.equeue.retry_delay_seconds"))
		_, ok = event(first, "exception")
		assert.True(t, ok, "the error is recorded")
		assert.Equal(t, codes.Unset, second.Status().Code)
		assert.Equal(t, "handled", attr(second, "messaging.equeue.outcome"))
		assert.False(t, second.StartTime().Before(first.EndTime()), "the retry starts after the failed attempt")

		stored := spansNamed(rec, "retry g")
		require.Len(t, stored, 1, "the broker's span of storing the retry")
		assert.Equal(t, send.SpanContext().TraceID(), stored[0].SpanContext().TraceID())
		assert.Equal(t, send.SpanContext().SpanID(), stored[0].Parent().SpanID())
		assert.Equal(t, equeue.RetryTopic("g"), attr(stored[0], "messaging.destination.name"))
		assert.Equal(t, "1", attr(stored[0], "messaging.equeue.attempt"))
		assert.Equal(t, "g", attr(stored[0], "messaging.consumer.group.name"))
	})
}

// TestTracer_DelayedStartsAfterDelay sends a delayed message: its send
// span records the delivery time, and its process span, in the same trace,
// starts after it.
func TestTracer_DelayedStartsAfterDelay(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		tp, rec := recorder(t)
		tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
		e := openEngine(t, &equeue.Options{Observer: tr.Observer()})
		b := brokerOver(t, e, transport)
		require.NoError(t, e.CreateTopic(ctx, "later", 1))
		startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "later"}},
			Hooks: []equeue.Hooks{tr.Hooks()}, Handler: func(context.Context, *equeue.Message) error { return nil }})
		const delay = 300 * time.Millisecond
		res, err := newProducer(t, b, tr).Send(ctx, &equeue.Message{Topic: "later", Body: []byte("x"), Delay: delay})
		require.NoError(t, err)
		require.True(t, res.Delayed)
		eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process later")) == 1 }, "the delayed delivery")

		send := spansNamed(rec, "send later")[0]
		proc := spansNamed(rec, "process later")[0]
		assert.Equal(t, send.SpanContext().TraceID(), proc.SpanContext().TraceID())
		ev, ok := event(send, otel.EventDelayed)
		require.True(t, ok, "the send records the delay")
		at, err := time.Parse(time.RFC3339Nano, eventAttr(ev, "messaging.equeue.deliver_at"))
		require.NoError(t, err)
		assert.False(t, at.Before(send.StartTime().Add(delay)))
		assert.False(t, proc.StartTime().Before(send.StartTime().Add(delay)), "process starts %v after send, not before the delay", proc.StartTime().Sub(send.StartTime()))
		assert.False(t, proc.StartTime().Before(at), "process starts after the delivery time")
		assert.NotEmpty(t, attr(proc, "messaging.equeue.deliver_at"))

		// The scheduler records its span once the move returned, which may
		// be after the consumer handled the message it made visible.
		eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "deliver later")) > 0 }, "the deliver span")
		due := spansNamed(rec, "deliver later")
		require.Len(t, due, 1, "the broker's span of making the message visible")
		assert.Equal(t, send.SpanContext().TraceID(), due[0].SpanContext().TraceID())
		assert.Equal(t, send.SpanContext().SpanID(), due[0].Parent().SpanID())
		assert.False(t, due[0].StartTime().Before(at), "made visible once due")
		assert.False(t, proc.StartTime().Before(due[0].StartTime()), "handled after it was made visible")
		assert.Equal(t, attr(proc, "messaging.equeue.offset"), attr(due[0], "messaging.equeue.offset"), "the offset it was given")
	})
}

// TestTracer_DeadLetterAndRedrive dead-letters a message and redrives it:
// the dead-lettering attempt records the event, and the redriven delivery
// is still in the send's trace.
func TestTracer_DeadLetterAndRedrive(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	e := openEngine(t, &equeue.Options{Observer: tr.Observer()})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var fail sync.Map
	fail.Store("x", true)
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		MaxAttempts: 1, Hooks: []equeue.Hooks{tr.Hooks()},
		Handler: func(_ context.Context, m *equeue.Message) error {
			if _, ok := fail.Load(string(m.Body)); ok {
				return errors.New("poison")
			}
			return nil
		}})
	_, err := newProducer(t, e, tr).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process t")) == 1 }, "the failed attempt")
	first := spansNamed(rec, "process t")[0]
	_, ok := event(first, otel.EventDeadLetter)
	assert.True(t, ok, "dead-lettering is recorded")
	assert.Equal(t, "dead-letter", attr(first, "messaging.equeue.outcome"))
	dl := spansNamed(rec, "dead-letter g")
	require.Len(t, dl, 1, "the broker's span of storing the dead letter")
	assert.Equal(t, first.SpanContext().TraceID(), dl[0].SpanContext().TraceID())
	assert.Equal(t, equeue.DLQTopic("g"), attr(dl[0], "messaging.destination.name"))

	fail.Delete("x")
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process t")) == 2 }, "the redriven delivery")
	send := spansNamed(rec, "send t")[0]
	again := spansNamed(rec, "process t")[1]
	assert.Equal(t, send.SpanContext().TraceID(), again.SpanContext().TraceID(), "a redriven dead letter keeps its trace")
	assert.Equal(t, "handled", attr(again, "messaging.equeue.outcome"))
}

// TestTracer_BatchAndLink sends a batch: one send span carries both
// messages; with Link, each process span starts a new trace linked to it.
func TestTracer_BatchAndLink(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	prodTr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	consTr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp, Link: true})
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "b", 1))
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "b"}},
		Hooks: []equeue.Hooks{consTr.Hooks()}, Handler: func(context.Context, *equeue.Message) error { return nil }})
	_, err := newProducer(t, e, prodTr).SendBatch(ctx, []*equeue.Message{{Topic: "b", Body: []byte("1")}, {Topic: "b", Body: []byte("2")}})
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process b")) == 2 }, "both messages")
	send := spansNamed(rec, "send b")
	require.Len(t, send, 1, "one span for the batch")
	assert.Equal(t, "2", attr(send[0], "messaging.batch.message_count"))
	for _, p := range spansNamed(rec, "process b") {
		assert.NotEqual(t, send[0].SpanContext().TraceID(), p.SpanContext().TraceID(), "a linked span starts its own trace")
		assert.False(t, p.Parent().IsValid())
		require.Len(t, p.Links(), 1)
		assert.Equal(t, send[0].SpanContext().SpanID(), p.Links()[0].SpanContext.SpanID())
	}
}

// TestTracer_PullConsumer: StartProcess joins a hand-fetched message to
// its trace; Inject and Extract round-trip a context without writing into
// the caller's map.
func TestTracer_PullConsumer(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp, Propagator: propagation.TraceContext{}})
	sctx, span := tp.Tracer("app").Start(ctx, "parent")
	shared := map[string]string{"k": "v"}
	m := &equeue.Message{Topic: "t", Properties: shared}
	tr.Inject(sctx, m)
	assert.Equal(t, map[string]string{"k": "v"}, shared)
	assert.Len(t, m.Properties, 2)
	assert.Equal(t, span.SpanContext().TraceID(), trace.SpanContextFromContext(tr.Extract(ctx, m)).TraceID())

	_, ps := tr.StartProcess(ctx, m, "pullers")
	ps.End()
	span.End()
	p := spansNamed(rec, "process t")
	require.Len(t, p, 1)
	assert.Equal(t, span.SpanContext().SpanID(), p[0].Parent().SpanID())
	assert.Equal(t, "pullers", attr(p[0], "messaging.consumer.group.name"))
}

// TestTracer_FailedSend records the error on the send span.
func TestTracer_FailedSend(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	e := openEngine(t, nil)
	_, err := newProducer(t, e, otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})).Send(ctx, &equeue.Message{Topic: "missing", Body: []byte("x")})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	s := spansNamed(rec, "send missing")
	require.Len(t, s, 1)
	assert.Equal(t, codes.Error, s[0].Status().Code)
}

// TestTracer_SelectorPanicEndsTheSendSpan: a producer's selector that
// panics fails the send with equeue.ErrSelectorPanic, and the send span
// ends with that error recorded. The panic used to leave the span open
// (never exported) and reach the caller.
func TestTracer_SelectorPanicEndsTheSendSpan(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, &equeue.ProducerOptions{
		Hooks:    []equeue.Hooks{otel.NewTracer(&otel.TracerOptions{TracerProvider: tp}).Hooks()},
		Selector: equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { panic("boom") }),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	sends := map[string]func() error{
		"Send": func() error {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			return err
		},
		"SendBatch": func() error {
			_, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("x")}, {Topic: "t", Body: []byte("y")}})
			return err
		},
		"SendAsync": func() error {
			_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
			return err
		},
	}
	for name, send := range sends {
		t.Run(name, func(t *testing.T) {
			before := len(spansNamed(rec, "send t"))
			var err error
			assert.NotPanics(t, func() { err = send() })
			assert.ErrorIs(t, err, equeue.ErrSelectorPanic)
			s := spansNamed(rec, "send t")
			require.Len(t, s, before+1, "the send span ended")
			assert.Equal(t, codes.Error, s[before].Status().Code)
			assert.Contains(t, s[before].Status().Description, "boom")
		})
	}
}
