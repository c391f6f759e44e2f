package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// TestConsumer_NotHandledAtStopIsNotCountedConcurrent: a concurrent
// consumer's handlers that return ErrNotHandled once Close cancelled their
// context spend no attempt either, clustering or broadcasting: the messages
// stay uncommitted, are not sent back (nor retried in place), and are not
// run again by the stopping consumer's drain, so each close-and-restart
// cycle runs each message once, at Attempt 0, and none reaches the dead
// letters or the retry topic, though MaxAttempts is 1. Returned while its
// context is live, ErrNotHandled is a failed attempt like any other error.
func TestConsumer_NotHandledAtStopIsNotCountedConcurrent(t *testing.T) {
	for _, model := range []equeue.MessageModel{equeue.Clustering, equeue.Broadcasting} {
		t.Run(model.String(), func(t *testing.T) {
			forTransports(t, func(t *testing.T, tr string) {
				ctx := ctxT(t)
				e, b := openOver(t, tr, "memory", nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				type run struct {
					offset  int64
					attempt int
				}
				seen := make(chan run, 64)
				var live atomic.Bool // return ErrNotHandled at once
				opts := equeue.ConsumerOptions{Group: "g", ID: "w", Model: model, Concurrency: 2,
					Subscriptions: []equeue.Subscription{{Topic: "t"}}, MaxAttempts: 1,
					LocalRetryDelay: time.Hour, ShutdownTimeout: 20 * time.Millisecond,
					Handler: func(ctx context.Context, m *equeue.Message) error {
						seen <- run{m.Offset, m.Attempt}
						if !live.Load() {
							<-ctx.Done() // stopped before it began
						}
						return fmt.Errorf("passing it on: %w", equeue.ErrNotHandled)
					}}
				p := newProducer(t, b, nil)
				for range 2 {
					_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
					require.NoError(t, err)
				}
				deadLetters := func() int {
					dl, err := e.DeadLetters(ctx, "g", 0, 10)
					require.NoError(t, err)
					return len(dl)
				}
				retries := func() int64 {
					ti, err := e.Topic(ctx, equeue.RetryTopic("g"))
					if errors.Is(err, equeue.ErrTopicNotFound) {
						return 0
					}
					require.NoError(t, err)
					return ti.Messages
				}
				next := func() run {
					select {
					case r := <-seen:
						return r
					case <-time.After(30 * time.Second):
						t.Fatal("no message ran within 30s")
						return run{}
					}
				}
				for cycle := range 3 {
					c, err := equeue.NewConsumer(b, opts)
					require.NoError(t, err)
					require.NoError(t, c.Start(ctx))
					got := []run{next(), next()}
					assert.ElementsMatch(t, []run{{0, 0}, {1, 0}}, got, "cycle %d: an earlier stop counted an attempt", cycle)
					require.NoError(t, c.Close(), "cycle %d", cycle)
					assert.Zero(t, len(seen), "cycle %d: the stopping consumer ran a message again", cycle)
					require.Zero(t, deadLetters(), "cycle %d: dead-lettered by a stop", cycle)
					require.Zero(t, retries(), "cycle %d: sent back by a stop", cycle)
				}

				live.Store(true)
				c, err := equeue.NewConsumer(b, opts)
				require.NoError(t, err)
				require.NoError(t, c.Start(ctx))
				eventually(t, 30*time.Second, func() bool { return deadLetters() == 2 },
					"ErrNotHandled while the context is live is a failed attempt: MaxAttempts 1 dead-letters it")
				require.NoError(t, c.Close())
			})
		})
	}
}

// TestConsumer_NotHandledAtStopByABatchHandlerIsCounted: ErrNotHandled is
// Handler's word only. A BatchHandler that returns it once Close cancelled
// its context fails its messages like any other error, orderly or
// concurrent, in batches of one or more: each message run counts an
// attempt, so with MaxAttempts 1 Close dead-letters every message that ran
// (found by review: a concurrent consumer, and an orderly one with
// BatchSize 1, left them uncommitted without counting the run).
func TestConsumer_NotHandledAtStopByABatchHandlerIsCounted(t *testing.T) {
	for _, tc := range []struct {
		orderly   bool
		batchSize int
	}{{false, 2}, {false, 1}, {true, 2}, {true, 1}} {
		t.Run(fmt.Sprintf("orderly=%v/batch=%d", tc.orderly, tc.batchSize), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			for range 2 {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
				require.NoError(t, err)
			}
			ran := make(chan int, 4) // the messages of each run
			c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "w", Orderly: tc.orderly,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, MaxAttempts: 1, BatchSize: tc.batchSize,
				LocalRetryDelay: time.Hour, ShutdownTimeout: 20 * time.Millisecond,
				BatchHandler: func(ctx context.Context, msgs []*equeue.Message) error {
					ran <- len(msgs)
					<-ctx.Done() // stopped before it began
					return fmt.Errorf("passing them on: %w", equeue.ErrNotHandled)
				}})
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			n := 0
			select {
			case n = <-ran:
			case <-time.After(30 * time.Second):
				t.Fatal("no batch ran within 30s")
			}
			require.NoError(t, c.Close())
			for len(ran) > 0 {
				n += <-ran
			}
			dl, err := e.DeadLetters(ctx, "g", 0, 10)
			require.NoError(t, err)
			assert.Len(t, dl, n, "a stopped batch's run is a counted attempt: MaxAttempts 1 dead-letters its messages")
		})
	}
}
