package metrics_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// TestCollector_NamespaceHandlerSeriesSurviveScrapes: a consumer on a
// namespace sees its messages under the namespace's names ("orders"), which
// the engine lists qualified ("tenant:orders"). A scrape must not take the
// handler series of a live namespaced topic for those of a deleted topic.
func TestCollector_NamespaceHandlerSeriesSurviveScrapes(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "orders", 1))

	handled := make(chan struct{}, 2)
	c, err := equeue.NewConsumer(ns, equeue.ConsumerOptions{
		Group:         "billing",
		Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		Hooks:         []equeue.Hooks{m.Hooks()},
		Handler: func(context.Context, *equeue.Message) error {
			handled <- struct{}{}
			return nil
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

	count := func() uint64 {
		m := find(t, reg, "equeue_handler_duration_seconds", map[string]string{"topic": "orders"})
		if m == nil {
			return 0
		}
		return m.GetHistogram().GetSampleCount()
	}
	require.Equal(t, uint64(1), count(), "first scrape")
	require.Equal(t, uint64(1), count(), "second scrape: the topic still exists, its handling was not forgotten")
}
