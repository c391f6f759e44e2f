package equeue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// pullSizes is a broker that records the Max of every pull that found
// messages.
type pullSizes struct {
	equeue.Broker
	mu   sync.Mutex
	maxs []int
	got  []int
}

func (p *pullSizes) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := p.Broker.Pull(ctx, req)
	if err == nil && len(res.Messages) > 0 {
		p.mu.Lock()
		p.maxs = append(p.maxs, req.Max)
		p.got = append(p.got, len(res.Messages))
		p.mu.Unlock()
	}
	return res, err
}

// A consumer reads a backlog in pulls of DefaultConsumerPullBatch (128)
// unless told otherwise: PullBatch sets it, a smaller MaxCachedMessages
// lowers it, and a larger BatchSize of a BatchHandler raises it. Every message is handled once whatever the size.
func TestConsumer_PullBatchDefault(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	const n = 600
	msgs := make([]*equeue.Message, n)
	for i := range msgs {
		msgs[i] = &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)}
	}
	_, err := p.SendBatch(ctx, msgs)
	require.NoError(t, err)

	for _, c := range []struct {
		name string
		opts equeue.ConsumerOptions
		want int
	}{
		{"default", equeue.ConsumerOptions{}, equeue.DefaultConsumerPullBatch},
		{"PullBatch-8", equeue.ConsumerOptions{PullBatch: 8}, 8},
		{"BatchSize-200", equeue.ConsumerOptions{BatchSize: 200}, 200},
		{"MaxCachedMessages-50", equeue.ConsumerOptions{MaxCachedMessages: 50}, 50},
		{"MaxCachedMessages-10", equeue.ConsumerOptions{MaxCachedMessages: 10}, 10},                             // BatchSize counts only with a BatchHandler
		{"MaxCachedMessages-10-BatchSize-20", equeue.ConsumerOptions{MaxCachedMessages: 10, BatchSize: 20}, 20}, // a batch fits one pull
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := &pullSizes{Broker: e}
			var handled atomic.Int64
			o := c.opts
			o.Group, o.Subscriptions, o.From = "g-"+c.name, []equeue.Subscription{{Topic: "t"}}, equeue.ConsumeFromEarliest
			if o.BatchSize > 0 {
				o.BatchHandler = func(_ context.Context, ms []*equeue.Message) error {
					handled.Add(int64(len(ms)))
					return nil
				}
			} else {
				o.Handler = func(context.Context, *equeue.Message) error {
					handled.Add(1)
					return nil
				}
			}
			cons, err := equeue.NewConsumer(ps, o)
			require.NoError(t, err)
			require.NoError(t, cons.Start(ctx))
			eventually(t, 10*time.Second, func() bool { return handled.Load() >= n }, "all handled")
			require.NoError(t, cons.Close())
			assert.Equal(t, int64(n), handled.Load(), "each message once")
			ps.mu.Lock()
			defer ps.mu.Unlock()
			require.NotEmpty(t, ps.maxs)
			for _, m := range ps.maxs {
				assert.Equal(t, c.want, m, "every pull asks for the batch")
			}
			assert.Equal(t, min(c.want, n), ps.got[0], "the first pull of the backlog is a full batch")
		})
	}
}
