package metrics_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// TestCollector_SeriesMatchWhatHappenedThroughReopenAndDeletes compares
// each series to what was done: sends per queue, handler calls and
// failures, retries and dead letters of the group, pulls. A second scrape
// counts nothing twice; after the engine is reopened the engine's
// counters count what happened since (nothing), the offsets are kept and
// the Observer's event counters neither grow nor restart; deleting the
// group drops its series (and those of its retry and dead-letter topics),
// deleting the topic drops its own, the event series included.
func TestCollector_SeriesMatchWhatHappenedThroughReopenAndDeletes(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	m := metrics.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	open := func() *equeue.Engine {
		e, err := equeue.Open(dir, &equeue.Options{Observer: m})
		require.NoError(t, err)
		m.Attach(e)
		return e
	}
	e := open()
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "jobs", 2))

	sends := map[int][]string{0: {"ok", "flaky", "poison"}, 1: {"ok", "ok"}}
	for q, bodies := range sends {
		p, err := equeue.NewProducer(e, &equeue.ProducerOptions{Selector: fixed(q)})
		require.NoError(t, err)
		for _, b := range bodies {
			_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte(b)})
			require.NoError(t, err)
		}
		require.NoError(t, p.Close())
	}

	var calls, failures atomic.Int64
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		PullWait:      50 * time.Millisecond,
		Hooks:         []equeue.Hooks{m.Hooks()},
		Handler: func(_ context.Context, msg *equeue.Message) error {
			calls.Add(1)
			switch {
			case string(msg.Body) == "poison":
				failures.Add(1)
				return equeue.DeadLetter(errors.New("cannot parse"))
			case string(msg.Body) == "flaky" && msg.Attempt == 0:
				failures.Add(1)
				return equeue.RetryAfter(time.Millisecond, errors.New("try again"))
			}
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	require.Eventually(t, func() bool { return calls.Load() == 6 }, 10*time.Second, 5*time.Millisecond,
		"five messages and the flaky one again")
	require.NoError(t, c.Close()) // commits, leaves; AfterHandle has run

	jobs := map[string]string{"topic": "jobs"}
	group := map[string]string{"group": "workers"}
	retryTopic := map[string]string{"topic": equeue.RetryTopic("workers")}
	dlqTopic := map[string]string{"topic": equeue.DLQTopic("workers")}
	check := func(scrape string) {
		for q, bodies := range sends {
			qs := map[string]string{"topic": "jobs", "queue": []string{"0", "1"}[q]}
			assert.Equal(t, float64(len(bodies)), value(t, reg, "equeue_appended_messages_total", qs), "%s: appended %v", scrape, qs)
			assert.Equal(t, float64(len(bodies)), value(t, reg, "equeue_queue_max_offset", qs), "%s: max offset %v", scrape, qs)
			assert.Zero(t, value(t, reg, "equeue_queue_min_offset", qs), "%s: min offset %v", scrape, qs)
			lag := map[string]string{"group": "workers", "topic": "jobs", "queue": qs["queue"]}
			require.NotNil(t, find(t, reg, "equeue_group_lag", lag), "%s: lag %v", scrape, lag)
			assert.Zero(t, value(t, reg, "equeue_group_lag", lag), "%s: lag %v", scrape, lag)
		}
		assert.Equal(t, 1.0, value(t, reg, "equeue_retries_total", group), scrape)
		assert.Equal(t, 1.0, value(t, reg, "equeue_dead_letters_total", group), scrape)
		assert.Equal(t, 1.0, sum(t, reg, "equeue_appended_messages_total", retryTopic), "%s: the retry copy, once due", scrape)
		assert.Equal(t, 1.0, sum(t, reg, "equeue_appended_messages_total", dlqTopic), scrape)
		assert.Zero(t, value(t, reg, "equeue_group_members", group), "%s: the consumer left", scrape)
		assert.Equal(t, 5.0, value(t, reg, "equeue_pulled_messages_total", jobs), scrape)
		assert.Equal(t, 1.0, value(t, reg, "equeue_pulled_messages_total", retryTopic), scrape)
		h := find(t, reg, "equeue_handler_duration_seconds", jobs)
		require.NotNil(t, h, scrape)
		assert.Equal(t, uint64(calls.Load()), h.GetHistogram().GetSampleCount(), "%s: one observation per handler call", scrape)
		assert.Equal(t, float64(failures.Load()), value(t, reg, "equeue_handler_errors_total", jobs), scrape)
	}
	check("first scrape")
	check("second scrape")

	// Reopened: the engine's counters count since the open, the offsets
	// and the group's committed position are kept, the Observer's event
	// counters are the process's and do not move.
	require.NoError(t, e.Close())
	e = open()
	for q := range sends {
		qs := map[string]string{"topic": "jobs", "queue": []string{"0", "1"}[q]}
		assert.Zero(t, value(t, reg, "equeue_appended_messages_total", qs), "reopened: appended since the open %v", qs)
		assert.Equal(t, float64(len(sends[q])), value(t, reg, "equeue_queue_max_offset", qs), "reopened: max offset %v", qs)
		assert.Zero(t, value(t, reg, "equeue_group_lag", map[string]string{"group": "workers", "topic": "jobs", "queue": qs["queue"]}))
	}
	assert.Zero(t, value(t, reg, "equeue_retries_total", group), "reopened: retries since the open")
	assert.Zero(t, value(t, reg, "equeue_dead_letters_total", group), "reopened: dead letters since the open")
	assert.Equal(t, 5.0, value(t, reg, "equeue_pulled_messages_total", jobs), "reopened: no pull counted again")
	assert.Equal(t, float64(failures.Load()), value(t, reg, "equeue_handler_errors_total", jobs), "reopened: no error counted again")

	// Deleting the group drops its series and those of its topics.
	require.NoError(t, e.DeleteGroup(ctx, "workers", equeue.DeleteGroupOptions{}))
	for _, name := range []string{"equeue_retries_total", "equeue_dead_letters_total", "equeue_group_members", "equeue_group_lag"} {
		assert.Nil(t, find(t, reg, name, group), "deleted group: %s", name)
	}
	for _, topic := range []map[string]string{retryTopic, dlqTopic} {
		for _, name := range []string{"equeue_appended_messages_total", "equeue_queue_max_offset", "equeue_pulled_messages_total", "equeue_pull_duration_seconds"} {
			assert.Nil(t, find(t, reg, name, topic), "deleted group's topic %v: %s", topic, name)
		}
	}

	// Deleting the topic drops its series, its event series included.
	require.NoError(t, e.DeleteTopic(ctx, "jobs"))
	for _, name := range []string{
		"equeue_appended_messages_total", "equeue_appended_bytes_total", "equeue_queue_min_offset", "equeue_queue_max_offset",
		"equeue_pulled_messages_total", "equeue_pull_duration_seconds", "equeue_handler_duration_seconds", "equeue_handler_errors_total",
	} {
		assert.Nil(t, find(t, reg, name, jobs), "deleted topic: %s", name)
	}
}
