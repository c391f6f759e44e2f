package metrics_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixed routes every message to queue q.
func fixed(q int) equeue.QueueSelector {
	return equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { return q })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openWith opens an in-memory engine whose Observer is m, attaches it and
// registers m on a fresh pedantic registry (which checks every metric
// against its description).
func openWith(t *testing.T, m *metrics.Collector) (*equeue.Engine, *prometheus.Registry) {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true, Observer: m})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	m.Attach(e)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	return e, reg
}

// find returns the metric of family name whose labels include want, or nil.
func find(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue metric
				}
			}
			return m
		}
	}
	return nil
}

// value is the counter or gauge value of a metric, 0 when absent.
func value(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	m := find(t, reg, name, labels)
	switch {
	case m == nil:
		return 0
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	t.Fatalf("%s is neither a counter nor a gauge", name)
	return 0
}

func sum(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

func TestCollector_CountsMoveAfterSends(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 2))

	q0 := map[string]string{"topic": "orders", "queue": "0"}
	require.Zero(t, value(t, reg, "equeue_appended_messages_total", q0))
	require.NotNil(t, find(t, reg, "equeue_appended_messages_total", q0), "a queue is exported before its first message")

	p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Selector: fixed(0)})
	require.NoError(t, err)
	defer p.Close()
	for i := 0; i < 5; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("hello")})
		require.NoError(t, err)
	}
	require.Equal(t, 5.0, value(t, reg, "equeue_appended_messages_total", q0))
	require.Greater(t, value(t, reg, "equeue_appended_bytes_total", q0), 5.0*5)
	require.Equal(t, 5.0, value(t, reg, "equeue_queue_max_offset", q0))
	require.Equal(t, 0.0, value(t, reg, "equeue_queue_min_offset", q0))
	require.Zero(t, value(t, reg, "equeue_appended_messages_total", map[string]string{"topic": "orders", "queue": "1"}))
	require.NotNil(t, find(t, reg, "equeue_store_bytes", nil))
	require.NotNil(t, find(t, reg, "equeue_corrupt_records_total", nil))
	require.NotNil(t, find(t, reg, "equeue_expired_messages_total", nil))
	require.NotNil(t, find(t, reg, "equeue_no_space_refusals_total", nil))
	require.Zero(t, value(t, reg, "equeue_lost_dedup_groups_total", nil))
	require.Zero(t, value(t, reg, "equeue_unsupported_format_pulls_total", nil))

	// The whole exposition passes the Prometheus linter.
	problems, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	require.Empty(t, problems)
}

func TestCollector_GroupLagRetriesAndDeadLetters(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()

	var handled atomic.Int64
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:          "workers",
		Subscriptions:  []equeue.Subscription{{Topic: "jobs"}},
		From:           equeue.ConsumeFromEarliest,
		CommitInterval: 10 * time.Millisecond,
		PullWait:       50 * time.Millisecond,
		Hooks:          []equeue.Hooks{m.Hooks()},
		Handler: func(_ context.Context, msg *equeue.Message) error {
			handled.Add(1)
			switch string(msg.Body) {
			case "poison":
				return equeue.DeadLetter(errors.New("cannot parse"))
			case "flaky":
				if msg.Attempt == 0 {
					return equeue.RetryAfter(time.Millisecond, errors.New("try again"))
				}
			}
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	for _, body := range []string{"ok", "poison", "flaky"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte(body)})
		require.NoError(t, err)
	}
	lagOf := map[string]string{"group": "workers", "topic": "jobs", "queue": "0"}
	require.Eventually(t, func() bool {
		return handled.Load() >= 4 && value(t, reg, "equeue_group_lag", lagOf) == 0 &&
			find(t, reg, "equeue_group_lag", lagOf) != nil
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, 1.0, value(t, reg, "equeue_group_members", map[string]string{"group": "workers"}))
	require.Equal(t, 1.0, value(t, reg, "equeue_retries_total", map[string]string{"group": "workers"}))
	require.Equal(t, 1.0, value(t, reg, "equeue_dead_letters_total", map[string]string{"group": "workers"}))

	// Handler metrics, by the message's original topic.
	h := find(t, reg, "equeue_handler_duration_seconds", map[string]string{"topic": "jobs"})
	require.NotNil(t, h)
	require.GreaterOrEqual(t, h.GetHistogram().GetSampleCount(), uint64(4))
	require.Equal(t, 2.0, value(t, reg, "equeue_handler_errors_total", map[string]string{"topic": "jobs"}))

	// The group leaves; what is sent next is lag.
	require.NoError(t, c.Close())
	for i := 0; i < 3; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("later")})
		require.NoError(t, err)
	}
	require.Equal(t, 3.0, value(t, reg, "equeue_group_lag", lagOf))
	require.Equal(t, 0.0, value(t, reg, "equeue_group_members", map[string]string{"group": "workers"}))
}

// TestCollector_ConsumerHookPanics: a consumer's hook that panics is
// recovered and logged to the consumer's logger, silent by default; the
// collector exports the engine's count of them, so they are seen.
func TestCollector_ConsumerHookPanics(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	require.NotNil(t, find(t, reg, "equeue_consumer_hook_panics_total", nil), "exported before the first panic")
	require.Zero(t, value(t, reg, "equeue_consumer_hook_panics_total", nil))

	handled := make(chan struct{}, 10)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		From:          equeue.ConsumeFromEarliest,
		Hooks: []equeue.Hooks{
			{BeforeHandle: func(context.Context, *equeue.Message) { panic("boom before") }},
			{AfterHandle: func(context.Context, *equeue.Message, error, time.Duration) { panic("boom after") }},
			m.Hooks(),
		},
		Handler: func(context.Context, *equeue.Message) error {
			handled <- struct{}{}
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("x")})
	require.NoError(t, err)

	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the message was not handled")
	}
	require.Eventually(t, func() bool {
		return value(t, reg, "equeue_consumer_hook_panics_total", nil) == 2
	}, 20*time.Second, 5*time.Millisecond, "both hooks' panics are counted")
	require.Equal(t, 2, int(e.Stats().ConsumerHookPanics))
}

func TestObserver_PullHistogram(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 1, Wait: 20 * time.Millisecond})
	require.NoError(t, err)

	full := find(t, reg, "equeue_pull_duration_seconds", map[string]string{"topic": "t", "result": metrics.ResultMessages})
	require.NotNil(t, full)
	require.Equal(t, uint64(1), full.GetHistogram().GetSampleCount())
	empty := find(t, reg, "equeue_pull_duration_seconds", map[string]string{"topic": "t", "result": metrics.ResultEmpty})
	require.NotNil(t, empty)
	require.Equal(t, uint64(1), empty.GetHistogram().GetSampleCount())
	require.GreaterOrEqual(t, empty.GetHistogram().GetSampleSum(), 0.015, "the long-poll wait is part of the duration")
	require.Equal(t, 1.0, value(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": "t"}))
}

func TestCollector_BeforeAttachAndAfterClose(t *testing.T) {
	obs := metrics.NewObserver()
	obs.ObservePull("early", 0, time.Millisecond, 2)
	c := metrics.NewCollector(nil, &metrics.CollectorOptions{Observer: obs})
	require.Same(t, obs, c.Observer())

	// Unattached: only the event metrics.
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	require.Equal(t, 2.0, value(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": "early"}))
	require.Nil(t, find(t, reg, "equeue_store_bytes", nil))

	e, err := equeue.Open("", &equeue.Options{InMemory: true, Observer: obs})
	require.NoError(t, err)
	c.Attach(e)
	require.NoError(t, e.CreateTopic(ctxT(t), "a", 1))
	require.NotNil(t, find(t, reg, "equeue_store_bytes", nil))

	// A closed engine is still scraped without error.
	require.NoError(t, e.Close())
	_, err = reg.Gather()
	require.NoError(t, err)

	c.Attach(nil)
	require.Nil(t, find(t, reg, "equeue_queue_max_offset", nil))
}

func TestCollector_BroadcastLagOnePerQueue(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "news", 2))
	var consumers []*equeue.Consumer
	for _, id := range []string{"a", "b"} {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
			Group: "readers", ID: id, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "news"}},
			PullWait:      50 * time.Millisecond,
			Handler:       func(context.Context, *equeue.Message) error { return nil },
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		consumers = append(consumers, c)
	}
	for _, c := range consumers {
		require.NoError(t, c.Close())
	}
	p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Selector: fixed(1)})
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "news", Body: []byte("x")})
	require.NoError(t, err)

	// Two members, one series per queue (a duplicate would fail Gather).
	require.Equal(t, 1.0, value(t, reg, "equeue_group_lag", map[string]string{"group": "readers", "topic": "news", "queue": "1"}))
	require.Equal(t, 1.0, sum(t, reg, "equeue_group_lag", map[string]string{"group": "readers"}))
	out, err := testutil.CollectAndFormat(m, expfmt.TypeTextPlain, "equeue_group_lag")
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(out), "equeue_group_lag{"))
}
