// Package otel traces and measures an equeue engine with OpenTelemetry.
//
// The package shares its name with go.opentelemetry.io/otel; a file that
// needs both imports one under another name (for example eqotel).
//
// It lives apart from the engine so that a program that does not import it
// links no OpenTelemetry SDK: the engine only offers generic hooks
// (equeue.Hooks.Trace and equeue.Observer), which this package implements.
//
// # Tracing
//
// A Tracer's Hooks, given to producers and consumers, start a producer span
// per Send, SendAsync and SendBatch ("send <topic>") and a consumer span per
// handling attempt ("process <topic>"), with the OpenTelemetry messaging
// semantic conventions: system "equeue", destination (topic), partition
// (queue), message ID, consumer group, operation, plus the equeue-specific
// messaging.equeue.offset and messaging.equeue.attempt.
//
//	tr := otel.NewTracer(nil) // the global TracerProvider, W3C trace context
//	p, _ := equeue.NewProducer(eng, &equeue.ProducerOptions{Hooks: []equeue.Hooks{tr.Hooks()}})
//	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{..., Hooks: []equeue.Hooks{tr.Hooks()}})
//
// The trace context travels in the message's properties ("traceparent" and
// "tracestate" with the default propagator), so it crosses a remote broker
// unchanged and is kept by everything the engine does to a message: a
// retried message (through the retry topic or locally), a delayed one, a
// dead letter and a redriven dead letter all carry the producer's context.
// A handling attempt's span is by default a child of the producer span, so
// the send and every attempt form one trace; with TracerOptions.Link it is
// the root of a new trace, linked to the producer span. The handler runs in
// the span's context, so its own spans nest below it. When the attempt
// fails, its span records the error and an event saying what follows:
// "equeue.retry" (with the delay), "equeue.retry_local", "equeue.dead_letter"
// or "equeue.unfinished"; a delayed send records "equeue.delayed" with the
// delivery time.
//
// A PullConsumer has no handler to wrap: StartProcess starts the same span
// for a message fetched by hand.
//
// # Metrics
//
// Metrics exports through an OpenTelemetry MeterProvider what package
// metrics exports to Prometheus, from the same sources: it is the engine's
// Observer (pull durations), its Hooks record handler time and errors, and
// the rest (appended messages and bytes, offsets, group lag and members,
// retries, dead letters, store size) is read from the attached engine at
// each collection. Observers combines it with a Prometheus collector when
// both are wanted, since an engine has one Observer.
package otel
