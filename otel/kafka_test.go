package otel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
	"github.com/equeue-go/equeue/otel"
)

// serveKafka starts the Kafka listener over e, closed when the test ends.
func serveKafka(t *testing.T, e *equeue.Engine) string {
	t.Helper()
	s, err := kafka.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		<-done
	})
	return lis.Addr().String()
}

// A Kafka producer's traceparent header becomes the message's trace
// context: the native consumer's process span is in that trace, a child of
// the span that produced it. And a native send's trace context reaches a
// Kafka consumer as the traceparent header.
func TestTracer_KafkaHeadersCarryTheTrace(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	addr := serveKafka(t, e)

	// Kafka in, native out.
	sctx, span := tp.Tracer("kafka-app").Start(ctx, "kafka produce")
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(sctx, carrier)
	require.NotEmpty(t, carrier["traceparent"])
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer kc.Close()
	rec0 := &kgo.Record{Value: []byte("from kafka"), Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(carrier["traceparent"])}}}
	require.NoError(t, kc.ProduceSync(ctx, rec0).FirstErr())
	span.End()

	handled := make(chan *equeue.Message, 1)
	startConsumer(t, e, equeue.ConsumerOptions{Group: "billing", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Hooks:   []equeue.Hooks{tr.Hooks()},
		Handler: func(_ context.Context, m *equeue.Message) error { handled <- m; return nil }})
	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the Kafka-produced message was not handled")
	}
	eventually(t, 10*time.Second, func() bool { return len(spansNamed(rec, "process orders")) == 1 }, "the process span")
	proc := spansNamed(rec, "process orders")[0]
	assert.Equal(t, span.SpanContext().TraceID(), proc.SpanContext().TraceID(), "the process span is in the Kafka producer's trace")
	assert.Equal(t, span.SpanContext().SpanID(), proc.Parent().SpanID(), "a child of the span that produced it")

	// Native in, Kafka out.
	p := newProducer(t, e, tr)
	nctx, nspan := tp.Tracer("app").Start(ctx, "native send")
	_, err = p.Send(nctx, &equeue.Message{Topic: "orders", Body: []byte("from equeue")})
	require.NoError(t, err)
	nspan.End()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	var got *kgo.Record
	for got == nil && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "from equeue" {
				got = r
			}
		})
	}
	require.NotNil(t, got, "the Kafka consumer got the native message")
	hdr := map[string]string{}
	for _, h := range got.Headers {
		hdr[h.Key] = string(h.Value)
	}
	require.NotEmpty(t, hdr["traceparent"], "the trace context travels as a Kafka header")
	back := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(hdr))
	sends := spansNamed(rec, "send orders")
	require.Len(t, sends, 1)
	assert.Equal(t, nspan.SpanContext().TraceID(), sends[0].SpanContext().TraceID())
	assert.Equal(t, sends[0].SpanContext().TraceID(), trace.SpanContextFromContext(back).TraceID(), "the header names the native send's trace")
}
