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

// Consumers, concurrent and orderly, closed while other members join
// (the queues moving as Close runs): no handler of a closed consumer starts or runs after its Close
// returned, and every message is handled by the group.
func TestHuntGroups_CloseRacingRebalanceLeavesNoHandlerRunning(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(map[bool]string{false: "concurrent", true: "orderly"}[orderly], func(t *testing.T) {
			e, _ := openEngine(t, "memory", nil)
			const queues, n = 4, 60
			require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
			var seen huntSeen
			var (
				mu       sync.Mutex
				closed   = map[string]bool{}
				running  = map[string]int{}
				late     []string
				handlers atomic.Int64
			)
			mk := func(id string) equeue.ConsumerOptions {
				return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Orderly: orderly, Concurrency: 2, ShutdownTimeout: 2 * time.Second, HandoffTimeout: 2 * time.Second,
					Handler: func(_ context.Context, m *equeue.Message) error {
						handlers.Add(1)
						mu.Lock()
						if closed[id] {
							late = append(late, fmt.Sprintf("%s started %s after Close", id, m.Body))
						}
						running[id]++
						mu.Unlock()
						time.Sleep(2 * time.Millisecond)
						seen.add(id, m)
						mu.Lock()
						running[id]--
						mu.Unlock()
						return nil
					}}
			}
			cur, curID := startConsumer(t, e, mk("a")), "a"
			huntSend(t, e, "t", queues, "m", n)
			eventually(t, 10*time.Second, func() bool { return handlers.Load() > 5 }, "a consumes")
			for round := range 3 {
				id := fmt.Sprintf("j%d", round)
				joined := make(chan *equeue.Consumer, 1)
				go func() {
					defer close(joined)
					c, err := equeue.NewConsumer(e, mk(id))
					if assert.NoError(t, err) && assert.NoError(t, c.Start(ctxT(t))) {
						joined <- c
					}
				}()
				require.NoError(t, cur.Close())
				mu.Lock()
				if running[curID] > 0 {
					late = append(late, fmt.Sprintf("%s has %d handlers running after Close", curID, running[curID]))
				}
				closed[curID] = true
				mu.Unlock()
				c := <-joined
				require.NotNil(t, c)
				t.Cleanup(func() { _ = c.Close() })
				huntSend(t, e, "t", queues, fmt.Sprintf("r%d", round), 8)
				cur, curID = c, id
			}
			eventually(t, 10*time.Second, func() bool { return len(seen.missing("m", n)) == 0 }, "every message handled: missing %v", seen.missing("m", n))
			for round := range 3 {
				eventually(t, 10*time.Second, func() bool { return len(seen.missing(fmt.Sprintf("r%d", round), 8)) == 0 },
					"round %d handled: missing %v", round, seen.missing(fmt.Sprintf("r%d", round), 8))
			}
			require.NoError(t, cur.Close())
			mu.Lock()
			defer mu.Unlock()
			assert.Empty(t, late)
		})
	}
}
