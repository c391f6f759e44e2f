package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// TestCollector_DelayedRetryCountsWhenSentBack: a failed message stored in
// the group's retry topic counts in retries_total once it is stored, not
// once its retry delay (10 s to 2 h by default) has passed and it becomes
// visible in the retry topic.
func TestCollector_DelayedRetryCountsWhenSentBack(t *testing.T) {
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()

	failed := make(chan struct{}, 1)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group:         "workers",
		Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		PullWait:      50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error {
			select {
			case failed <- struct{}{}:
			default:
			}
			return equeue.RetryAfter(time.Hour, errors.New("later"))
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	_, err = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("x")})
	require.NoError(t, err)
	<-failed
	require.NoError(t, c.Close()) // the failure's send-back is stored once Close returns

	group := map[string]string{"group": "workers"}
	require.Equal(t, 1.0, value(t, reg, "equeue_retries_total", group), "the retry was stored, due in an hour")
	require.Zero(t, value(t, reg, "equeue_dead_letters_total", group))
}
