package otel

import (
	"context"
	"strconv"
	"time"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/equeue-go/equeue"
)

// ScopeName is the instrumentation scope of the spans and metrics of this
// package.
const ScopeName = "github.com/equeue-go/equeue/otel"

// System is the value of messaging.system on every span.
const System = "equeue"

// Attribute keys of equeue's own, in the messaging.equeue namespace the
// semantic conventions leave to each messaging system.
const (
	// AttrOffset is the message's offset in its queue (its original queue
	// for a retried message).
	AttrOffset = attribute.Key("messaging.equeue.offset")
	// AttrAttempt counts the earlier failed handling attempts of the
	// message: 0 on the first delivery, 1 on the first retry.
	AttrAttempt = attribute.Key("messaging.equeue.attempt")
	// AttrAttempts counts the handling attempts of the message so far, the
	// one that just ended included (on the events of a failed attempt).
	AttrAttempts = attribute.Key("messaging.equeue.attempts")
	// AttrTag is the message's tag, when it has one.
	AttrTag = attribute.Key("messaging.equeue.tag")
	// AttrDeliverAt is the delivery time of a delayed message (RFC 3339).
	AttrDeliverAt = attribute.Key("messaging.equeue.deliver_at")
	// AttrOutcome says what followed a handling attempt (equeue.Outcome).
	AttrOutcome = attribute.Key("messaging.equeue.outcome")
	// AttrDelay is the wait before the next attempt, in seconds.
	AttrDelay = attribute.Key("messaging.equeue.retry_delay_seconds")
	// AttrDuplicate marks a send that the topic's dedup window absorbed.
	AttrDuplicate = attribute.Key("messaging.equeue.duplicate")
)

// Event names recorded on spans.
const (
	// EventDelayed: a send stored a message for later delivery.
	EventDelayed = "equeue.delayed"
	// EventRetry: a failed message was stored in the group's retry topic.
	EventRetry = "equeue.retry"
	// EventRetryLocal: the consumer retries a failed message itself.
	EventRetryLocal = "equeue.retry_local"
	// EventDeadLetter: a failed message went to the group's dead letters.
	EventDeadLetter = "equeue.dead_letter"
	// EventUnfinished: the consumer stopped before the attempt's outcome
	// was stored; the message is delivered again.
	EventUnfinished = "equeue.unfinished"
)

// TracerOptions configure a Tracer. A nil *TracerOptions, and every zero
// field, means the documented default.
type TracerOptions struct {
	// TracerProvider makes the spans. Nil means the global provider
	// (go.opentelemetry.io/otel.GetTracerProvider) at the time of each span.
	TracerProvider trace.TracerProvider
	// Propagator writes and reads the trace context in message properties.
	// Nil means W3C trace context and baggage ("traceparent", "tracestate",
	// "baggage"), whatever the global propagator is: the message format
	// should not change with a process's settings.
	Propagator propagation.TextMapPropagator
	// Link makes each handling span the root of a new trace, linked to the
	// producer span, instead of its child. Use it when one send fans out to
	// many consumers or long after it, and traces should stay small.
	Link bool
}

// Tracer traces sends and handling through equeue hooks. It is safe for
// concurrent use.
type Tracer struct {
	tp   trace.TracerProvider
	prop propagation.TextMapPropagator
	link bool
}

// NewTracer returns a Tracer with opts.
func NewTracer(opts *TracerOptions) *Tracer {
	var o TracerOptions
	if opts != nil {
		o = *opts
	}
	if o.Propagator == nil {
		o.Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	return &Tracer{tp: o.TracerProvider, prop: o.Propagator, link: o.Link}
}

func (t *Tracer) tracer() trace.Tracer {
	tp := t.tp
	if tp == nil {
		tp = gotel.GetTracerProvider()
	}
	return tp.Tracer(ScopeName)
}

// Hooks returns the hooks to give producers and consumers
// (ProducerOptions.Hooks, ConsumerOptions.Hooks).
func (t *Tracer) Hooks() equeue.Hooks {
	return equeue.Hooks{Trace: &equeue.TraceHooks{StartSend: t.startSend, StartHandle: t.startHandle}}
}

// Inject writes the trace context of ctx into m's properties (into a new
// map: the old one is not written into).
func (t *Tracer) Inject(ctx context.Context, m *equeue.Message) {
	add := writeCarrier{}
	t.prop.Inject(ctx, add)
	m.Properties = withProperties(m.Properties, add)
}

// Extract returns ctx with the trace context (and baggage) m carries.
func (t *Tracer) Extract(ctx context.Context, m *equeue.Message) context.Context {
	return t.prop.Extract(ctx, readCarrier(m.Properties))
}

var systemAttr = semconv.MessagingSystemKey.String(System)

func (t *Tracer) startSend(ctx context.Context, msgs []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
	topic := msgs[0].Topic
	attrs := []attribute.KeyValue{
		systemAttr,
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("send"),
		semconv.MessagingDestinationName(topic),
	}
	if len(msgs) > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(len(msgs)))
	} else {
		m := msgs[0]
		attrs = append(attrs, semconv.MessagingMessageBodySize(len(m.Body)))
		if m.ID != "" {
			attrs = append(attrs, semconv.MessagingMessageID(m.ID))
		}
		if m.Tag != "" {
			attrs = append(attrs, AttrTag.String(m.Tag))
		}
	}
	now := time.Now()
	ctx, span := t.tracer().Start(ctx, "send "+topic, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	// One carrier for the call: every message of a batch carries the
	// batch's span.
	add := writeCarrier{}
	t.prop.Inject(ctx, add)
	deliverAt := make([]time.Time, len(msgs))
	for i, m := range msgs {
		m.Properties = withProperties(m.Properties, add)
		switch {
		case m.Delay > 0:
			deliverAt[i] = now.Add(m.Delay)
		case m.DeliverAt.After(now):
			deliverAt[i] = m.DeliverAt
		}
	}
	return ctx, func(res []equeue.SendResult, err error) {
		defer span.End()
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			return
		}
		if len(res) == 0 {
			return
		}
		r := res[0]
		span.SetAttributes(semconv.MessagingDestinationPartitionID(strconv.Itoa(r.Queue)))
		if len(res) == 1 {
			span.SetAttributes(semconv.MessagingMessageID(r.ID))
			if r.Offset >= 0 {
				span.SetAttributes(AttrOffset.Int64(r.Offset))
			}
		} else if r.Offset >= 0 {
			span.SetAttributes(AttrOffset.Int64(r.Offset)) // the batch's first offset
		}
		if r.Duplicate { // a batch is a duplicate as a whole
			span.SetAttributes(AttrDuplicate.Bool(true))
		}
		for i, r := range res {
			// A duplicate stored nothing: when the original is delivered
			// is not this send's delay.
			if r.Delayed && !r.Duplicate && i < len(deliverAt) && !deliverAt[i].IsZero() {
				span.AddEvent(EventDelayed, trace.WithAttributes(
					semconv.MessagingMessageID(r.ID), AttrDeliverAt.String(deliverAt[i].UTC().Format(time.RFC3339Nano))))
			}
		}
	}
}

func (t *Tracer) startHandle(ctx context.Context, m *equeue.Message, d equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
	ctx, span := t.start(ctx, m, d.Group, d.Consumer)
	return ctx, func(o equeue.HandleOutcome) { endHandle(span, o) }
}

// StartProcess starts the span of handling m, a message a PullConsumer
// fetched for group, in ctx joined to the trace m carries. End the span
// when done, after recording an error if the handling failed.
func (t *Tracer) StartProcess(ctx context.Context, m *equeue.Message, group string) (context.Context, trace.Span) {
	return t.start(ctx, m, group, "")
}

func (t *Tracer) start(ctx context.Context, m *equeue.Message, group, member string) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, 14)
	attrs = append(attrs,
		systemAttr,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationName(m.Topic),
		semconv.MessagingDestinationPartitionID(strconv.Itoa(m.Queue)),
		semconv.MessagingMessageID(m.ID),
		semconv.MessagingMessageBodySize(len(m.Body)),
		AttrOffset.Int64(m.Offset),
		AttrAttempt.Int(m.Attempt),
	)
	if group != "" {
		attrs = append(attrs, semconv.MessagingConsumerGroupName(group))
	}
	if member != "" {
		attrs = append(attrs, semconv.MessagingClientID(member))
	}
	if m.Tag != "" {
		attrs = append(attrs, AttrTag.String(m.Tag))
	}
	if !m.DeliverAt.IsZero() {
		attrs = append(attrs, AttrDeliverAt.String(m.DeliverAt.UTC().Format(time.RFC3339Nano)))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	pctx := t.prop.Extract(ctx, readCarrier(m.Properties))
	if t.link {
		if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
		// Keep the baggage, drop the parent.
		pctx = trace.ContextWithSpanContext(pctx, trace.SpanContext{})
		opts = append(opts, trace.WithNewRoot())
	}
	return t.tracer().Start(pctx, "process "+m.Topic, opts...)
}

func endHandle(span trace.Span, o equeue.HandleOutcome) {
	defer span.End()
	span.SetAttributes(AttrOutcome.String(o.Outcome.String()))
	if o.Err == nil {
		return
	}
	span.RecordError(o.Err)
	span.SetStatus(codes.Error, o.Err.Error())
	attrs := []attribute.KeyValue{AttrAttempts.Int(o.Attempts)}
	switch o.Outcome {
	case equeue.OutcomeRetry:
		span.AddEvent(EventRetry, trace.WithAttributes(append(attrs, AttrDelay.Float64(o.Delay.Seconds()))...))
	case equeue.OutcomeRetryLocal:
		attrs = append(attrs, AttrDelay.Float64(o.Delay.Seconds()))
		if o.StoreErr != nil {
			attrs = append(attrs, attribute.String("error.message", o.StoreErr.Error()))
		}
		span.AddEvent(EventRetryLocal, trace.WithAttributes(attrs...))
	case equeue.OutcomeDeadLetter:
		span.AddEvent(EventDeadLetter, trace.WithAttributes(attrs...))
	case equeue.OutcomeUnfinished:
		span.AddEvent(EventUnfinished, trace.WithAttributes(attrs...))
	}
}
