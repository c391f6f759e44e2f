package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestConsumer_NotHandledAtStopIsNotCounted: an orderly handler that
// returns ErrNotHandled (wrapped here) once Close cancelled its context
// does not spend an attempt: over close-and-restart cycles the message
// keeps Attempt 0 and never reaches the dead letters, though MaxAttempts
// is 1. Returned while its context is live, ErrNotHandled is a failed
// attempt like any other error.
func TestConsumer_NotHandledAtStopIsNotCounted(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		seen := make(chan int, 64) // the Attempt of each run
		live := false              // return ErrNotHandled at once
		opts := equeue.ConsumerOptions{Group: "g", ID: "w", Orderly: true,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, MaxAttempts: 1,
			LocalRetryDelay: time.Hour, ShutdownTimeout: 20 * time.Millisecond,
			Handler: func(ctx context.Context, m *equeue.Message) error {
				seen <- m.Attempt
				if !live {
					<-ctx.Done() // stopped before it began
				}
				return fmt.Errorf("passing it on: %w", equeue.ErrNotHandled)
			}}
		p := newProducer(t, b, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
		deadLetters := func() int {
			dl, err := e.DeadLetters(ctx, "g", 0, 10)
			require.NoError(t, err)
			return len(dl)
		}
		run := func() int {
			select {
			case a := <-seen:
				return a
			case <-time.After(30 * time.Second):
				t.Fatal("the message did not run within 30s")
				return -1
			}
		}
		for cycle := range 3 {
			c, err := equeue.NewConsumer(b, opts)
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			assert.Equal(t, 0, run(), "cycle %d: an earlier stop counted an attempt", cycle)
			require.NoError(t, c.Close(), "cycle %d", cycle)
		}
		assert.Zero(t, deadLetters(), "dead-lettered by stops")

		live = true
		c, err := equeue.NewConsumer(b, opts)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		assert.Equal(t, 0, run())
		eventually(t, 30*time.Second, func() bool { return deadLetters() == 1 },
			"ErrNotHandled while the context is live is a failed attempt: MaxAttempts 1 dead-letters it")
		require.NoError(t, c.Close())
	})
}
