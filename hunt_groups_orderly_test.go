package equeue_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Orderly members whose handler fails every message's first two attempts
// (retried in place) while members join and leave: across the whole
// group one handler runs per queue at a time, each queue's messages
// first succeed in offset order, and every message is handled.
func TestHuntGroups_OrderlyRetriesAcrossRebalanceOneHandlerPerQueue(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	const queues, n = 2, 40
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var (
		mu       sync.Mutex
		running  = map[int]string{}
		overlaps []string
		attempts = map[string]int{}
		done     = map[int][]int{} // queue -> indexes in first-success order
		ok       = map[string]bool{}
	)
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Orderly: true, LocalRetryDelay: time.Millisecond, MaxAttempts: 100,
			HandoffTimeout: 5 * time.Second, ShutdownTimeout: 5 * time.Second,
			Handler: func(_ context.Context, m *equeue.Message) error {
				b := string(m.Body)
				mu.Lock()
				if other, busy := running[m.Queue]; busy {
					overlaps = append(overlaps, fmt.Sprintf("%s on queue %d while %s runs there", b, m.Queue, other))
				}
				running[m.Queue] = id + ":" + b
				attempts[b]++
				att := attempts[b]
				fail := att <= 2
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				delete(running, m.Queue)
				if !fail && !ok[b] {
					ok[b] = true
					i, _ := strconv.Atoi(strings.TrimPrefix(b, "m-"))
					done[m.Queue] = append(done[m.Queue], i)
				}
				mu.Unlock()
				if fail {
					return fmt.Errorf("attempt %d of %s fails", att, b)
				}
				return nil
			}}
	}
	a := startConsumer(t, e, mk("a"))
	huntSend(t, e, "t", queues, "m", n)
	for round := range 3 {
		c := startConsumer(t, e, mk(fmt.Sprintf("j%d", round)))
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, a.Close())
		a = c
	}
	eventually(t, 15*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ok) == n
	}, "every message handled")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, overlaps)
	for q, idx := range done {
		for i := 1; i < len(idx); i++ {
			assert.Less(t, idx[i-1], idx[i], "queue %d: first successes in offset order: %v", q, idx)
		}
	}
}
