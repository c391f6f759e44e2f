package otel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/equeue-go/equeue"
)

// Observer returns an engine Observer that adds the broker's own spans to
// each message's trace: "retry <group>" and "dead-letter <group>" when the
// engine stores a failed message in a group's retry topic or dead letters,
// and "deliver <topic>" when a delayed message becomes visible. Give it to
// the engine (Options.Observer, with others through Observers); on a remote
// broker these spans are the server's part of the trace.
func (t *Tracer) Observer() equeue.MoveObserver { return engineObserver{t} }

type engineObserver struct{ t *Tracer }

func (engineObserver) ObservePull(string, int, time.Duration, int) {}

func (o engineObserver) ObserveMove(ctx context.Context, ev equeue.MoveEvent) {
	m := ev.Message
	name := ev.Kind.String()
	attrs := []attribute.KeyValue{
		systemAttr,
		semconv.MessagingDestinationName(m.Topic),
		semconv.MessagingMessageID(m.ID),
		AttrAttempt.Int(m.Attempt),
	}
	switch ev.Kind {
	case equeue.MoveRetry, equeue.MoveDeadLetter:
		name += " " + ev.Group
		attrs = append(attrs, semconv.MessagingConsumerGroupName(ev.Group))
	case equeue.MoveDelayDue:
		name = "deliver " + m.Topic
		attrs = append(attrs, AttrOffset.Int64(m.Offset))
		if !m.DeliverAt.IsZero() {
			attrs = append(attrs, AttrDeliverAt.String(m.DeliverAt.UTC().Format(time.RFC3339Nano)))
		}
	}
	// The span belongs to the message's trace, not to the call that moved
	// it; the context only keeps its values.
	pctx := o.t.prop.Extract(trace.ContextWithSpanContext(ctx, trace.SpanContext{}), readCarrier(m.Properties))
	_, span := o.t.tracer().Start(pctx, name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.Start), trace.WithAttributes(attrs...))
	if ev.Err != nil {
		span.RecordError(ev.Err)
		span.SetStatus(codes.Error, ev.Err.Error())
	}
	span.End()
}
