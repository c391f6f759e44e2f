package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerPool_StartsOnDemandAndExitsWhenIdle: a consumer starts no
// handler worker until messages arrive, never runs more than Concurrency,
// and its workers exit once idle.
func TestWorkerPool_StartsOnDemandAndExitsWhenIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	release := make(chan struct{})
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Concurrency: 4,
		Handler: func(ctx context.Context, _ *Message) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	workers := func() int { return len(c.pool.slots) }
	assert.Zero(t, workers(), "no worker before the first message")

	msgs := make([]*Message, 10)
	for i := range msgs {
		msgs[i] = &Message{Body: []byte{byte(i)}}
	}
	for q := range 2 {
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return workers() == 4 }, "all 4 workers busy")
	for range 20 {
		assert.LessOrEqual(t, workers(), 4, "never more than Concurrency")
		time.Sleep(time.Millisecond)
	}
	close(release)
	waitFor(t, func() bool { return c.handled.Load() == 20 }, "every message handled")
	waitFor(t, func() bool { return workers() == 0 }, "idle workers exit")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPark_IdleRunnersHoldNoGoroutine: in-process, a runner at the end of
// its queue parks (its pull loop returns) and runs again at the next
// append; a parked runner still stops on Close.
func TestPark_IdleRunnersHoldNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	got := make(chan string, 8)
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *Message) error { got <- string(m.Body); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	// Two queues of t and the group's retry queue.
	waitFor(t, func() bool { return c.parkedCount() == 3 }, "every idle runner parks")
	for i, body := range []string{"one", "two"} {
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: i % 2, Messages: []*Message{{Body: []byte(body)}}})
		require.NoError(t, err)
		select {
		case b := <-got:
			assert.Equal(t, body, b)
		case <-ctx.Done():
			t.Fatal("a parked runner did not wake at the append")
		}
		waitFor(t, func() bool { return c.parkedCount() == 3 }, "the runner parks again")
	}
	require.NoError(t, c.Close())
	assert.Empty(t, got, "nothing handled twice")
	assert.Zero(t, c.parkedCount())
	assert.Zero(t, parkedOn(t, e, "t", 0)+parkedOn(t, e, "t", 1)+parkedOn(t, e, RetryTopic("g"), 0),
		"a closed consumer leaves nothing parked on the engine's queues")
}

// TestPark_HandoverLeavesNoSlots: runners that park and are handed over (a
// second member joins) or stop leave no callback behind on the queues, so
// repeated rebalances of idle queues do not grow the engine's memory.
func TestPark_HandoverLeavesNoSlots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	h := func(context.Context, *Message) error { return nil }
	a, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Handler: h})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	waitFor(t, func() bool { return a.parkedCount() == 5 }, "a parks on every queue")
	for range 5 {
		b, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "b", Subscriptions: []Subscription{{Topic: "t"}}, Handler: h})
		require.NoError(t, err)
		require.NoError(t, b.Start(ctx))
		waitFor(t, func() bool { return a.parkedCount()+b.parkedCount() == 5 }, "the queues are shared and parked")
		require.NoError(t, b.Close())
		waitFor(t, func() bool { return a.parkedCount() == 5 }, "a owns every queue again")
	}
	total := 0
	for q := range 4 {
		total += parkedOn(t, e, "t", q)
	}
	total += parkedOn(t, e, RetryTopic("g"), 0)
	assert.Equal(t, 5, total, "exactly a's five runners are parked on the queues")
	require.NoError(t, a.Close())
}

// parkedOn counts the parked runners on one queue.
func parkedOn(t *testing.T, e *Engine, topic string, queue int) int {
	t.Helper()
	q, err := e.queueOf(QueueRef{Topic: topic, Queue: queue})
	require.NoError(t, err)
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.parked)
}
