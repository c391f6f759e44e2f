package otel_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// benchTracer returns hooks for the mode: none ("off"), or a Tracer on an
// SDK provider that samples every span and exports it, batched, to an
// exporter that drops it ("on"): the cost of making and handing over
// spans, without a network.
func benchTracer(b *testing.B, mode string) []equeue.Hooks {
	if mode == "off" {
		return nil
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return []equeue.Hooks{otel.NewTracer(&otel.TracerOptions{TracerProvider: tp}).Hooks()}
}

func benchEngine(b *testing.B) *equeue.Engine {
	e, err := equeue.Open("", &equeue.Options{InMemory: true, Sync: equeue.SyncNever})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	if err := e.CreateTopic(context.Background(), "bench", 4); err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkSend measures Producer.Send of 100-byte messages by 8
// goroutines to an in-memory engine, with tracing off and on.
func BenchmarkSend(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run("tracing="+mode, func(b *testing.B) {
			e := benchEngine(b)
			p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Hooks: benchTracer(b, mode)})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			body := make([]byte, 100)
			ctx := context.Background()
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Send(ctx, &equeue.Message{Topic: "bench", Body: body}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkConsume measures a Consumer handling b.N messages stored
// beforehand (sent with tracing in the same mode), with a no-op handler.
func BenchmarkConsume(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run("tracing="+mode, func(b *testing.B) {
			ctx := context.Background()
			e := benchEngine(b)
			hooks := benchTracer(b, mode)
			p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Hooks: hooks})
			if err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 100)
			batch := make([]*equeue.Message, 0, 256)
			for sent := 0; sent < b.N; sent += len(batch) {
				batch = batch[:0]
				for range min(256, b.N-sent) {
					batch = append(batch, &equeue.Message{Topic: "bench", Body: body})
				}
				if _, err := p.SendBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			_ = p.Close()
			var seen atomic.Int64
			done := make(chan struct{})
			n := int64(b.N)
			c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "bench"}},
				Hooks: hooks, Handler: func(context.Context, *equeue.Message) error {
					if seen.Add(1) == n {
						close(done)
					}
					return nil
				}})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			<-done
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			b.StopTimer()
			_ = c.Close()
		})
	}
}
