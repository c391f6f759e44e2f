package otel_test

import (
	"context"
	"fmt"
	"sort"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// A producer and a consumer traced with one Tracer: the handler runs in the
// "process" span, a child of the "send" span, in the caller's trace.
func ExampleTracer() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})

	ctx := context.Background()
	eng, _ := equeue.Open("", &equeue.Options{InMemory: true, Observer: tr.Observer()})
	defer eng.Close()
	_ = eng.CreateTopic(ctx, "orders", 1)

	done := make(chan struct{})
	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{Group: "billing", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Hooks: []equeue.Hooks{tr.Hooks()},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			defer close(done)
			_, span := tp.Tracer("shop").Start(ctx, "charge card")
			span.End()
			return nil
		}})
	_ = c.Start(ctx)

	p, _ := equeue.NewProducer(eng, &equeue.ProducerOptions{Hooks: []equeue.Hooks{tr.Hooks()}})
	rctx, req := tp.Tracer("shop").Start(ctx, "POST /orders")
	_, _ = p.Send(rctx, &equeue.Message{Topic: "orders", Body: []byte("order 42")})
	req.End()
	<-done
	_ = c.Close() // the process span has ended once Close returned
	_ = p.Close()

	var lines []string
	for _, s := range rec.Ended() {
		lines = append(lines, fmt.Sprintf("%-14s same trace: %v", s.Name(), s.SpanContext().TraceID() == req.SpanContext().TraceID()))
	}
	sort.Strings(lines) // the handler may finish before Send returns
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// POST /orders   same trace: true
	// charge card    same trace: true
	// process orders same trace: true
	// send orders    same trace: true
}
