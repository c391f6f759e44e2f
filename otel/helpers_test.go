package otel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
	"github.com/equeue-go/equeue/remote"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var transports = []string{"inproc", "remote"}

func forTransports(t *testing.T, test func(t *testing.T, tr string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { test(t, tr) })
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openEngine opens an in-memory engine closed when the test ends.
func openEngine(t testing.TB, opts *equeue.Options) *equeue.Engine {
	t.Helper()
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	o.InMemory = true
	e, err := equeue.Open("", &o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// brokerOver returns e in-process, or a gRPC client of a remote.Server
// serving e on loopback, torn down before e closes.
func brokerOver(t testing.TB, e *equeue.Engine, transport string) equeue.Broker {
	t.Helper()
	if transport == "inproc" {
		return e
	}
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	c, err := remote.Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// recorder returns a tracer provider that keeps every ended span.
func recorder(t testing.TB) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func newProducer(t testing.TB, b equeue.Broker, tr *otel.Tracer) *equeue.Producer {
	t.Helper()
	var hooks []equeue.Hooks
	if tr != nil {
		hooks = []equeue.Hooks{tr.Hooks()}
	}
	p, err := equeue.NewProducer(b, &equeue.ProducerOptions{Hooks: hooks})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func startConsumer(t testing.TB, b equeue.Broker, o equeue.ConsumerOptions) *equeue.Consumer {
	t.Helper()
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 200 * time.Millisecond
	}
	c, err := equeue.NewConsumer(b, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxT(t)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// eventually waits for cond with a deadline instead of sleeping.
func eventually(t testing.TB, within time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// spansNamed returns the ended spans called name, in end order.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attr returns the value of the span attribute key, as a string ("" when absent).
func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

// event returns the span's event called name and whether it has one.
func event(s sdktrace.ReadOnlySpan, name string) (sdktrace.Event, bool) {
	for _, e := range s.Events() {
		if e.Name == name {
			return e, true
		}
	}
	return sdktrace.Event{}, false
}

func eventAttr(e sdktrace.Event, key string) string {
	for _, kv := range e.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}
