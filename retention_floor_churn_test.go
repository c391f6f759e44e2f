package equeue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRetention_KeepUnconsumedNeverPassesACommittedOffsetUnderChurn: while
// retention passes keeping unconsumed messages run back to back, sends go
// on and members of subscribed groups join and leave both topics, groups
// coordinated outside the engine store offsets (first ones, forward and
// back). Once such a commit returned, no later pass moves the queue's
// watermark past the offset stored (a pass under way may already have
// moved it above: then it stays where it was). Nor does anything deadlock
// while the floor index lets a pass hold only the topic it cuts.
func TestRetention_KeepUnconsumedNeverPassesACommittedOffsetUnderChurn(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	topics := []string{"a", "b"}
	for _, tp := range topics {
		require.NoError(t, e.CreateTopic(ctx, tp, 1))
	}
	bounds := func(tp string) (first, next int64, err error) {
		info, err := e.Topic(ctx, tp)
		if err != nil {
			return 0, 0, err
		}
		return info.Queues[0].MinOffset, info.Queues[0].MaxOffset, nil
	}

	var stop atomic.Bool
	var bg sync.WaitGroup
	for _, tp := range topics {
		bg.Go(func() {
			for !stop.Load() {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: tp, Messages: []*equeue.Message{{Body: []byte("x")}, {Body: []byte("y")}}})
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	for range 2 {
		bg.Go(func() {
			for !stop.Load() {
				// MaxAge of 1ns: everything sent is old enough, so only the
				// groups' offsets hold the watermarks back.
				_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{KeepUnconsumed: true, MaxAge: time.Nanosecond})
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}

	var work sync.WaitGroup
	for g := range 8 {
		work.Go(func() {
			name := fmt.Sprintf("ext%d", g)
			for range 150 {
				tp := topics[rand.IntN(len(topics))]
				first, next, err := bounds(tp)
				if !assert.NoError(t, err) {
					return
				}
				off := first + rand.Int64N(next-first+1)
				if rand.IntN(3) == 0 {
					off = max(first-2, 0) // back, below the watermark
				}
				if !assert.NoError(t, e.CommitGroupOffsets(ctx, name, map[equeue.QueueRef]int64{{Topic: tp}: off})) {
					return
				}
				then, _, err := bounds(tp)
				if !assert.NoError(t, err) {
					return
				}
				for range 5 {
					churnPause()
					now, _, err := bounds(tp)
					if !assert.NoError(t, err) {
						return
					}
					if now > max(then, off) {
						t.Errorf("group %s stored offset %d of %s (watermark %d then): a later pass moved the watermark past it, to %d", name, off, tp, then, now)
						return
					}
				}
			}
		})
	}
	for m := range 4 {
		work.Go(func() {
			for i := range 40 {
				c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: fmt.Sprintf("sub%d", m),
					Subscriptions: []equeue.Subscription{{Topic: topics[(m+i)%len(topics)]}},
					Handler:       func(context.Context, *equeue.Message) error { return nil }})
				if !assert.NoError(t, err) {
					return
				}
				if !assert.NoError(t, c.Start(ctx)) {
					return
				}
				churnPause()
				if !assert.NoError(t, c.Close()) {
					return
				}
			}
		})
	}
	work.Wait()
	stop.Store(true)
	bg.Wait()
	for _, tp := range topics {
		first, next, err := bounds(tp)
		require.NoError(t, err)
		t.Logf("%s: watermark %d, next %d", tp, first, next)
	}
}

// churnPause lets the other goroutines run a little: a pause, not a
// bound on anything.
func churnPause() { time.Sleep(50 * time.Microsecond) }
