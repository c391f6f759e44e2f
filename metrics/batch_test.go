package metrics_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// TestCollector_BatchHandlerTimeIsTheCallsTime: the handler histogram of a
// BatchHandler counts each message and sums the time the calls took.
// Before, each message of a batch was observed with the whole call's time,
// so the sum was the batch's size times the time the handler took.
func TestCollector_BatchHandlerTimeIsTheCallsTime(t *testing.T) {
	const n = 8
	m := metrics.New()
	e, reg := openWith(t, m)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rows", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	for i := range n { // stored before the consumer starts: one pull gets them all
		_, err := p.Send(ctx, &equeue.Message{Topic: "rows", Body: []byte(strconv.Itoa(i))})
		require.NoError(t, err)
	}

	var (
		mu          sync.Mutex
		first, last time.Time // the first BeforeHandle, the last AfterHandle
		largest     int
		after       int
	)
	done := make(chan struct{})
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "g", Subscriptions: []equeue.Subscription{{Topic: "rows"}},
		Orderly: true, BatchSize: n, // batches one after another
		Hooks: []equeue.Hooks{m.Hooks(), {
			BeforeHandle: func(context.Context, *equeue.Message) {
				mu.Lock()
				defer mu.Unlock()
				if first.IsZero() {
					first = time.Now()
				}
			},
			AfterHandle: func(context.Context, *equeue.Message, error, time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				last = time.Now() // after the Collector's hook, which runs first
				if after++; after == n {
					close(done)
				}
			},
		}},
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			time.Sleep(20 * time.Millisecond) // the batch's work
			mu.Lock()
			defer mu.Unlock()
			largest = max(largest, len(msgs))
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer c.Close()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the batch was not handled")
	}

	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, largest, 1, "a batch of several messages")
	h := find(t, reg, "equeue_handler_duration_seconds", map[string]string{"topic": "rows"})
	require.NotNil(t, h)
	assert.Equal(t, uint64(n), h.GetHistogram().GetSampleCount(), "one observation per message")
	assert.LessOrEqual(t, h.GetHistogram().GetSampleSum(), last.Sub(first).Seconds(), "no more than the calls' span")
}
