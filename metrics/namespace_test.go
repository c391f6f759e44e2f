package metrics_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// TestCollector_NamespaceHandlerSeriesSurviveScrapes: a consumer on a
// namespace sees its messages under the namespace's names ("orders"); its
// handler series carry the engine's name ("tenant:orders"), and a scrape
// must not take them for those of a deleted topic.
func TestCollector_NamespaceHandlerSeriesSurviveScrapes(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "orders", 1))

	handleOneOn(t, ns, m.Hooks(), nil)

	count := func() uint64 {
		m := find(t, reg, "equeue_handler_duration_seconds", map[string]string{"topic": "tenant:orders"})
		if m == nil {
			return 0
		}
		return m.GetHistogram().GetSampleCount()
	}
	require.Equal(t, uint64(1), count(), "first scrape")
	require.Equal(t, uint64(1), count(), "second scrape: the topic still exists, its handling was not forgotten")
}

// TestCollector_NamespaceSeriesShareTheEngineTopicName: the pull series
// (reported by the engine) and the handler series (reported by the hooks
// of a consumer on a namespace) of one namespaced topic carry the same
// topic label, the engine's qualified name that the queue and lag series
// carry too, so dashboards can join them on topic; and a topic of the
// same short name in the default namespace keeps series of its own.
func TestCollector_NamespaceSeriesShareTheEngineTopicName(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "orders", 1))
	require.NoError(t, e.CreateTopic(ctx, "orders", 1)) // the default namespace's own

	handleOneOn(t, ns, m.Hooks(), errors.New("fail once")) // counted in handler_errors_total

	qualified := map[string]string{"topic": "tenant:orders"}
	require.NotNil(t, find(t, reg, "equeue_pulled_messages_total", qualified), "pull series under the engine's name")
	require.NotNil(t, find(t, reg, "equeue_appended_messages_total", qualified), "queue series under the engine's name")
	h := find(t, reg, "equeue_handler_duration_seconds", qualified)
	require.NotNil(t, h, "handler series under the same name as the pull series")
	assert.Equal(t, uint64(1), h.GetHistogram().GetSampleCount())
	assert.Equal(t, 1.0, value(t, reg, "equeue_handler_errors_total", qualified))
	for _, name := range []string{"equeue_handler_duration_seconds", "equeue_handler_errors_total"} {
		assert.Nil(t, find(t, reg, name, map[string]string{"topic": "orders"}),
			"%s: the default namespace's orders handled nothing", name)
	}
}

// handleOneOn sends one message to the namespace's topic "orders" and has
// a consumer with hooks handle it, its handler answering result; the
// consumer is closed (so AfterHandle has run) when it returns.
func handleOneOn(t *testing.T, ns *equeue.Namespace, hooks equeue.Hooks, result error) {
	t.Helper()
	ctx := ctxT(t)
	handled := make(chan struct{}, 1)
	c, err := equeue.NewConsumer(ns, equeue.ConsumerOptions{
		Group:         "billing",
		Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Hooks:         []equeue.Hooks{hooks},
		Handler: func(context.Context, *equeue.Message) error {
			select {
			case handled <- struct{}{}:
			default:
			}
			return result
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	p, err := equeue.NewProducer(ns, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("x")})
	require.NoError(t, err)
	<-handled
	require.NoError(t, c.Close()) // AfterHandle has run once Close returns
}
