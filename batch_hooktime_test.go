package equeue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestBatch_AfterHandleSharesTheBatchTime: AfterHandle gets each message
// of a batch with its share of the BatchHandler call's time, so the times
// of a batch add up to the call, as a single handler's times do. Before,
// every message got the whole call's time: a histogram of handler time
// (package metrics, package otel) counted a batch of n messages as n times
// the time the handler took.
func TestBatch_AfterHandleSharesTheBatchTime(t *testing.T) {
	const n = 8
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sendBodies(t, e, "t", n) // stored before the consumer starts: one pull gets them all

	var (
		mu       sync.Mutex
		first    time.Time     // the first BeforeHandle
		last     time.Time     // the last AfterHandle
		inCalls  time.Duration // time measured inside the BatchHandler's calls
		largest  int           // the largest batch
		took     time.Duration // the times AfterHandle got, added up
		afterHad int
	)
	done := make(chan struct{})
	startConsumer(t, e, equeue.ConsumerOptions{
		Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Orderly: true, BatchSize: n, // batches one after another
		Hooks: []equeue.Hooks{{
			BeforeHandle: func(context.Context, *equeue.Message) {
				mu.Lock()
				defer mu.Unlock()
				if first.IsZero() {
					first = time.Now()
				}
			},
			AfterHandle: func(_ context.Context, _ *equeue.Message, _ error, d time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				last = time.Now()
				took += d
				afterHad++
				if afterHad == n {
					close(done)
				}
			},
		}},
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			start := time.Now()
			time.Sleep(20 * time.Millisecond) // the batch's work
			mu.Lock()
			defer mu.Unlock()
			largest = max(largest, len(msgs))
			inCalls += time.Since(start)
			return nil
		},
	})
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the batch was not handled")
	}

	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, largest, 1, "a batch of several messages")
	// Each share is the call's time divided by its size, rounded down to
	// the nanosecond: at most n ns lost in all.
	assert.GreaterOrEqual(t, took+n*time.Nanosecond, inCalls, "the shares add up to at least the time spent in the calls")
	assert.LessOrEqual(t, took, last.Sub(first), "the shares add up to no more than the calls' span, hooks included")
}
