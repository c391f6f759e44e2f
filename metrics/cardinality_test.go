package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// topicLabels returns the topic label values of the event metrics.
func topicLabels(t *testing.T, reg prometheus.Gatherer) map[string]bool {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "equeue_pull_duration_seconds", "equeue_pulled_messages_total", "equeue_handler_duration_seconds", "equeue_handler_errors_total":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "topic" {
					out[lp.GetValue()] = true
				}
			}
		}
	}
	return out
}

// TestCollector_RequestersAndDeletedTopicsAddNoSeries: a broker serving
// request-reply gets a reply topic per requesting producer, named at
// random and deleted when the producer closes. Before, each left its pull
// and handler series behind for as long as the process ran (a scrape, and
// the registry's memory, growing with every requester that ever came);
// now every reply topic is one label value, and a deleted topic's series
// go at the next scrape.
func TestCollector_RequestersAndDeletedTopicsAddNoSeries(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "upper", 1))
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))

	replies, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer replies.Close()
	svc, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:         "svc",
		Subscriptions: []equeue.Subscription{{Topic: "upper"}, {Topic: "gone"}},
		Hooks:         []equeue.Hooks{m.Hooks()},
		Handler: func(ctx context.Context, msg *equeue.Message) error {
			if msg.Topic == "gone" {
				return nil
			}
			return equeue.Reply(ctx, replies, msg, []byte(strings.ToUpper(string(msg.Body))), nil)
		},
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	defer svc.Close()

	// Ten requesters, one after another, each with its own reply topic.
	for i := range 10 {
		p, err := equeue.NewProducer(e, nil)
		require.NoError(t, err)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rep, err := p.Request(rctx, &equeue.Message{Topic: "upper", Body: []byte("hi")})
		cancel()
		require.NoError(t, err, "request %d", i)
		require.Equal(t, "HI", string(rep.Body))
		require.NoError(t, p.Close())
	}
	// And a topic that is handled, then deleted.
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "gone", Body: []byte("x")})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return value(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": "gone"}) == 1
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return topicLabels(t, reg)["gone"] && sum(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": equeue.ReplyTopicPrefix}) == 10
	}, 10*time.Second, 5*time.Millisecond, "every reply was pulled under one label")

	labels := topicLabels(t, reg)
	for l := range labels {
		assert.False(t, strings.HasPrefix(l, equeue.ReplyTopicPrefix) && l != equeue.ReplyTopicPrefix, "a reply topic's own series: %q", l)
	}
	assert.True(t, labels["upper"])
	assert.True(t, labels[equeue.ReplyTopicPrefix])

	require.NoError(t, svc.Close())
	require.NoError(t, e.DeleteTopic(ctx, "gone"))
	labels = topicLabels(t, reg)
	assert.False(t, labels["gone"], "a deleted topic's series are dropped at the next scrape")
	assert.True(t, labels["upper"])
	assert.Equal(t, 10.0, sum(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": equeue.ReplyTopicPrefix}))
}

// TestObserver_ForgetTopic: an Observer used without a Collector drops a
// topic's series when told.
func TestObserver_ForgetTopic(t *testing.T) {
	o := metrics.NewObserver()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(o))
	o.ObservePull("a", 0, time.Millisecond, 1)
	o.ObservePull("b", 0, time.Millisecond, 0)
	o.Hooks().AfterHandle(context.Background(), &equeue.Message{Topic: "a"}, assert.AnError, time.Millisecond)
	require.Equal(t, map[string]bool{"a": true, "b": true}, topicLabels(t, reg))
	o.ForgetTopic("a")
	require.Equal(t, map[string]bool{"b": true}, topicLabels(t, reg))
	o.ObservePull("a", 0, time.Millisecond, 1)
	require.Equal(t, 1.0, value(t, reg, "equeue_pulled_messages_total", map[string]string{"topic": "a"}), "counted afresh")
}
