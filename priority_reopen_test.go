package equeue_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPriority_BacklogAtOpenNeedsNoPollInterval: a backlog stored in every
// lane before the engine was reopened is handed out, higher lanes first,
// by a consumer started on the reopened engine, with no lane waiting for a
// long-poll to run out: the long-poll waits are an hour here, so a lane
// left waiting for one hangs the test (bounded by its own 30 s wait).
func TestPriority_BacklogAtOpenNeedsNoPollInterval(t *testing.T) {
	forTransports(t, testPriority_BacklogAtOpenNeedsNoPollInterval)
}

func testPriority_BacklogAtOpenNeedsNoPollInterval(t *testing.T, tr string) {
	clusterSuiteOnly(t, tr)
	ctx := ctxT(t)
	e, b, restart := openOverRestartable(t, tr, &equeue.Options{MaxPullWait: time.Hour})
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	const n = 6
	sendPriorities(t, b, "p", n, []int{0, 1, 2}, "m") // the lowest first
	_, b = restart()

	var mu sync.Mutex
	var prios []int
	all := make(chan struct{})
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		From: equeue.ConsumeFromEarliest, Concurrency: 1, BatchSize: 2, PullWait: time.Hour,
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				prios = append(prios, m.Priority)
			}
			if len(prios) == 3*n {
				close(all)
			}
			return nil
		}})
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		require.FailNow(t, "the backlog was not handed out", "handed out %d of %d: %v", len(prios), 3*n, prios)
	}
	mu.Lock()
	defer mu.Unlock()
	want := slices.Clone(prios)
	slices.SortStableFunc(want, func(a, b int) int { return b - a })
	assert.Equal(t, want, prios, "higher lanes first")
	assert.Equal(t, fmt.Sprint(slices.Repeat([]int{2}, n)), fmt.Sprint(prios[:n]), "the highest lane's backlog first")
}
