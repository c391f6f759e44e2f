package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestBatch_HandlerMayRewriteItsSlice: a BatchHandler owns the slice it
// gets, and may filter it in place (slices.DeleteFunc, which also clears
// the tail) or sort it, as Go code often does with a slice it was given.
// The consumer must still know which message each index of the batch is:
// a failure of the batch is retried for the messages that were handed
// out, each once, and every message is handled in the end. A concurrent
// consumer handed the handler the very slice it read back afterwards, so a
// rewritten slice made it retry the wrong messages, or, with the cleared
// tail, crash the process on a nil message.
func TestBatch_HandlerMayRewriteItsSlice(t *testing.T) {
	forTransports(t, testBatch_HandlerMayRewriteItsSlice)
}

func testBatch_HandlerMayRewriteItsSlice(t *testing.T, tr string) {
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprintf("orderly=%v", orderly), func(t *testing.T) {
			ctx := ctxT(t)
			e, b := openOver(t, tr, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			const n = 8
			sendBodies(t, b, "t", n) // one batch of 8
			var mu sync.Mutex
			seen := map[string][]int{} // body -> attempts it was handed out with
			calls := 0
			startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				CommitInterval: 20 * time.Millisecond, Orderly: orderly, BatchSize: n, Concurrency: 1,
				LocalRetryDelay: 10 * time.Millisecond, RetryTopicDelays: []time.Duration{10 * time.Millisecond},
				BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
					mu.Lock()
					defer mu.Unlock()
					calls++
					for _, m := range msgs {
						seen[string(m.Body)] = append(seen[string(m.Body)], m.Attempt)
					}
					// The odd bodies need no work: drop them from the slice,
					// in place, and sort the rest backwards.
					msgs = slices.DeleteFunc(msgs, func(m *equeue.Message) bool {
						i, _ := strconv.Atoi(string(m.Body))
						return i%2 == 1
					})
					slices.Reverse(msgs)
					if calls == 1 {
						return errors.New("the first call fails")
					}
					return nil
				}})
			// The failed messages go to the retry topic, delayed: the lag
			// can read 0 before they are due, so wait for their retries too.
			eventually(t, 30*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				for i := range n {
					if len(seen[strconv.Itoa(i)]) < 2 {
						return false
					}
				}
				return true
			}, "every message handled again")
			eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
			mu.Lock()
			defer mu.Unlock()
			for i := range n {
				assert.Equal(t, []int{0, 1}, seen[strconv.Itoa(i)], "message %d: failed with the first call, then handled once", i)
			}
		})
	}
}
