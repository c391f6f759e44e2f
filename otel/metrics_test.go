package otel_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/otel"
)

// collect reads every metric of reader by name.
func collect(t testing.TB, r sdkmetric.Reader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// intPoint returns the value of the int64 sum or gauge data point of m with
// attributes want, and whether there is one.
func intPoint(m metricdata.Metrics, want ...attribute.KeyValue) (int64, bool) {
	set := attribute.NewSet(want...)
	var pts []metricdata.DataPoint[int64]
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		pts = d.DataPoints
	case metricdata.Gauge[int64]:
		pts = d.DataPoints
	}
	for _, p := range pts {
		if p.Attributes.Equals(&set) {
			return p.Value, true
		}
	}
	return 0, false
}

func histCount(m metricdata.Metrics, want ...attribute.KeyValue) uint64 {
	set := attribute.NewSet(want...)
	if d, ok := m.Data.(metricdata.Histogram[float64]); ok {
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&set) {
				return p.Count
			}
		}
	}
	return 0
}

// busyEngine opens an engine observed by obs, with a topic "t" that had
// three messages, one handler failure through the retry topic and one dead
// letter, and a group "g" that has consumed them.
func busyEngine(t *testing.T, obs equeue.Observer, hooks ...equeue.Hooks) *equeue.Engine {
	t.Helper()
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{Observer: obs})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	done := make(chan struct{}, 8)
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryTopicDelays: []time.Duration{time.Millisecond}, CommitInterval: 20 * time.Millisecond, Hooks: hooks,
		Handler: func(_ context.Context, m *equeue.Message) error {
			defer func() { done <- struct{}{} }()
			switch {
			case string(m.Body) == "dead":
				return equeue.DeadLetter(errors.New("poison"))
			case string(m.Body) == "retry" && m.Attempt == 0:
				return errors.New("again")
			}
			return nil
		}})
	p := newProducer(t, e, nil)
	for _, b := range []string{"ok", "retry", "dead"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(b), Keys: []string{"k"}})
		require.NoError(t, err)
	}
	for range 4 { // ok, retry twice, dead
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("handlers did not run")
		}
	}
	eventually(t, 20*time.Second, func() bool {
		gs, err := e.Groups(ctx)
		require.NoError(t, err)
		for _, g := range gs {
			for _, q := range g.Queues {
				if g.Name == "g" && q.Topic == "t" && q.Lag != 0 {
					return false
				}
			}
		}
		return len(gs) > 0
	}, "the group's commits")
	return e
}

// TestMetrics_FromEngine records pulls and handling as the engine's
// Observer and hooks, and reads queue, group and store state at collection.
func TestMetrics_FromEngine(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })

	before := collect(t, reader)
	assert.NotContains(t, before, "equeue.appended.messages", "no engine attached: no state")

	panicky := equeue.Hooks{BeforeHandle: func(context.Context, *equeue.Message) { panic("boom") }}
	e := busyEngine(t, m, panicky, m.Hooks())
	m.Attach(e)
	got := collect(t, reader)

	topic := attribute.String("topic", "t")
	var appended int64
	for _, q := range []string{"0", "1"} {
		v, _ := intPoint(got["equeue.appended.messages"], topic, attribute.String("queue", q))
		appended += v
	}
	assert.Equal(t, int64(3), appended)
	v, ok := intPoint(got["equeue.retries"], attribute.String("group", "g"))
	assert.True(t, ok)
	assert.Equal(t, int64(1), v)
	v, _ = intPoint(got["equeue.dead_letters"], attribute.String("group", "g"))
	assert.Equal(t, int64(1), v)
	v, _ = intPoint(got["equeue.group.members"], attribute.String("group", "g"))
	assert.Equal(t, int64(1), v)
	_, ok = intPoint(got["equeue.group.lag"], attribute.String("group", "g"), topic, attribute.String("queue", "0"))
	assert.True(t, ok, "lag per group and queue")
	_, ok = intPoint(got["equeue.store.bytes"])
	assert.True(t, ok)
	v, ok = intPoint(got["equeue.no_space_refusals"])
	assert.True(t, ok)
	assert.Zero(t, v)
	v, ok = intPoint(got["equeue.lost_dedup_groups"])
	assert.True(t, ok)
	assert.Zero(t, v)
	v, ok = intPoint(got["equeue.unsupported_format_pulls"])
	assert.True(t, ok)
	assert.Zero(t, v)
	v, ok = intPoint(got["equeue.consumer.hook_panics"])
	assert.True(t, ok)
	assert.Equal(t, int64(4), v, "a BeforeHandle that panicked before each handler run")
	assert.Equal(t, uint64(4), histCount(got["equeue.handler.duration"], topic), "four handler runs")
	v, _ = intPoint(got["equeue.handler.errors"], topic)
	assert.Equal(t, int64(2), v)
	assert.NotZero(t, histCount(got["equeue.pull.duration"], topic, attribute.String("result", "messages")))
	v, _ = intPoint(got["equeue.pulled.messages"], topic)
	assert.GreaterOrEqual(t, v, int64(3))

	require.NoError(t, m.Close())
	after := collect(t, reader)
	_, ok = intPoint(after["equeue.appended.messages"], topic, attribute.String("queue", "0"))
	assert.False(t, ok, "Close unregisters the callback")
}

// TestObservers_FeedsBoth: one engine feeds a Prometheus collector and
// OpenTelemetry Metrics through Observers.
func TestObservers_FeedsBoth(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	prom := metrics.New()
	obs := otel.Observers(nil, prom, m)
	o := otel.Observers(nil, m)
	assert.Same(t, m, o, "one observer needs no tee")
	obs.ObservePull("x", 0, time.Millisecond, 2)
	got := collect(t, reader)
	v, _ := intPoint(got["equeue.pulled.messages"], attribute.String("topic", "x"))
	assert.Equal(t, int64(2), v)
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		mfs, err := gatherer(prom).Gather()
		require.NoError(t, err)
		found := false
		for _, mf := range mfs {
			if mf.GetName() == "equeue_pulled_messages_total" {
				found = mf.GetMetric()[0].GetCounter().GetValue() == 2
			}
		}
		assert.True(t, found, "the Prometheus collector saw the pull too")
	}()
	<-ch
}

// TestMetrics_ReplyTopicsAreOneAttribute: pulls and handling of any number
// of reply topics (one per requesting producer, named at random) are
// recorded under one topic attribute, so they add no attribute sets.
func TestMetrics_ReplyTopicsAreOneAttribute(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	for i := range 20 {
		reply := fmt.Sprintf("%s%032x", equeue.ReplyTopicPrefix, i)
		m.ObservePull(reply, 0, time.Millisecond, 1)
		m.Hooks().AfterHandle(context.Background(), &equeue.Message{Topic: reply}, nil, time.Millisecond)
	}
	m.ObservePull("orders", 0, time.Millisecond, 1)
	got := collect(t, reader)
	sum := got["equeue.pulled.messages"].Data.(metricdata.Sum[int64])
	assert.Len(t, sum.DataPoints, 2, "one series for the reply topics, one for orders")
	v, _ := intPoint(got["equeue.pulled.messages"], attribute.String("topic", equeue.ReplyTopicPrefix))
	assert.Equal(t, int64(20), v)
	assert.Equal(t, uint64(20), histCount(got["equeue.handler.duration"], attribute.String("topic", equeue.ReplyTopicPrefix)))
}

// TestMetrics_NamespaceHandlerAttributeIsTheEngineName: the handler
// instruments of a consumer on a Namespace carry the engine's name of the
// topic ("tenant:orders"), as its pull instruments do, not the view's
// short name, which the default namespace's own topic has.
func TestMetrics_NamespaceHandlerAttributeIsTheEngineName(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{Observer: m})
	m.Attach(e)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "orders", 1))

	handled := make(chan struct{}, 1)
	c := startConsumer(t, ns, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Hooks: []equeue.Hooks{m.Hooks()},
		Handler: func(context.Context, *equeue.Message) error {
			select {
			case handled <- struct{}{}:
			default:
			}
			return nil
		}})
	_, err = newProducer(t, ns, nil).Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("x")})
	require.NoError(t, err)
	<-handled
	require.NoError(t, c.Close()) // AfterHandle has run once Close returns

	got := collect(t, reader)
	qualified := attribute.String("topic", "tenant:orders")
	assert.NotZero(t, histCount(got["equeue.pull.duration"], qualified, attribute.String("result", "messages")))
	assert.Equal(t, uint64(1), histCount(got["equeue.handler.duration"], qualified), "handler under the engine's name")
	assert.Zero(t, histCount(got["equeue.handler.duration"], attribute.String("topic", "orders")))
}
