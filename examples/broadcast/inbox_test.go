package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Delivery is at least once: an invalidation a node receives again (a
// failed attempt retried, a restart before the commit) is kept once, not a
// panic, and the wait ends once every node received every invalidation.
func TestBroadcast_RedeliveryCountsOnce(t *testing.T) {
	ctx := context.Background()
	in := newInbox(2, 2)
	a := &equeue.Message{ID: "a", Topic: "invalidations", Body: []byte("user:1")}
	b := &equeue.Message{ID: "b", Topic: "invalidations", Body: []byte("user:2")}
	require.NotPanics(t, func() {
		require.NoError(t, in.node("cache-a")(ctx, a))
		require.NoError(t, in.node("cache-a")(ctx, b))
		require.NoError(t, in.node("cache-b")(ctx, a))
		require.NoError(t, in.node("cache-b")(ctx, a)) // a again
		require.NoError(t, in.node("cache-b")(ctx, b))
	})
	require.NoError(t, in.wait(time.Minute))
	assert.Equal(t, []string{"user:1", "user:2"}, in.received("cache-a"))
	assert.Equal(t, []string{"user:1", "user:2"}, in.received("cache-b"))
}

// A node that received one invalidation twice and another not at all has
// not received everything: the wait goes on, and gives up with an error
// after its time limit instead of waiting for ever.
func TestBroadcast_WaitGivesUp(t *testing.T) {
	ctx := context.Background()
	in := newInbox(2, 2)
	a := &equeue.Message{ID: "a", Topic: "invalidations", Body: []byte("user:1")}
	b := &equeue.Message{ID: "b", Topic: "invalidations", Body: []byte("user:2")}
	require.NoError(t, in.node("cache-a")(ctx, a))
	require.NoError(t, in.node("cache-a")(ctx, b))
	require.NoError(t, in.node("cache-b")(ctx, a))
	require.NoError(t, in.node("cache-b")(ctx, a))
	err := in.wait(10 * time.Millisecond)
	require.ErrorIs(t, err, errGaveUp)
	assert.Contains(t, err.Error(), "3 of 4")
}

// Through the engine: a node fails once on an invalidation, which its
// broadcasting consumer hands it again in place. The repeat is not a
// failed (panicking) handler, and each node keeps each invalidation once.
func TestBroadcast_RetriedInvalidationThroughTheEngine(t *testing.T) {
	ctx := context.Background()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, eng.Close()) }()
	require.NoError(t, eng.CreateTopic(ctx, "invalidations", 2))

	keys := []string{"user:1", "user:2", "cart:9"}
	in := newInbox(1, len(keys))
	node := in.node("cache-a")
	var (
		mu      sync.Mutex
		failed  bool
		results []error
	)
	retried := make(chan struct{})
	c, err := equeue.NewConsumer(eng, equeue.ConsumerOptions{
		Group:           "caches",
		ID:              "cache-a",
		Model:           equeue.Broadcasting,
		Subscriptions:   []equeue.Subscription{{Topic: "invalidations"}},
		Orderly:         true,
		LocalRetryDelay: time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if err := node(ctx, m); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if !failed && string(m.Body) == "user:1" {
				failed = true
				return errors.New("fails once")
			}
			return nil
		},
		Hooks: []equeue.Hooks{{AfterHandle: func(_ context.Context, m *equeue.Message, err error, _ time.Duration) {
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
			if string(m.Body) == "user:1" && m.Attempt == 1 {
				close(retried)
			}
		}}},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	for _, k := range keys {
		_, err := p.Send(ctx, &equeue.Message{Topic: "invalidations", Keys: []string{k}, Body: []byte(k)})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())

	waitErr := in.wait(time.Minute)
	select {
	case <-retried:
	case <-time.After(time.Minute):
		t.Fatal("the failed invalidation was not delivered again")
	}
	require.NoError(t, c.Close()) // waits for running handlers
	require.NoError(t, waitErr)
	mu.Lock()
	defer mu.Unlock()
	for _, err := range results {
		assert.NotErrorIs(t, err, equeue.ErrHandlerPanic)
	}
	assert.Len(t, results, len(keys)+1, "every invalidation once, and the failed one again")
	assert.ElementsMatch(t, keys, in.received("cache-a"))
}
