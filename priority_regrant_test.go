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

// TestPriority_RegrantedLaneKeepsLowerLanesWaiting: a higher lane granted
// anew (here by an offset reset) while its fenced handler still runs is a
// lane not pulled yet: when the fenced call returns at last, the lower lane
// must still wait for the higher lane's backlog instead of taking the
// fenced runner's stop for the end of that lane.
func TestPriority_RegrantedLaneKeepsLowerLanesWaiting(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	sendPriorities(t, e, "p", 3, []int{0, 1}, "m")
	high := equeue.QueueRef{Topic: "p", Queue: 1}

	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	log := &priorityLog{}
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}, Orderly: true,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			first := false
			once.Do(func() { first = true })
			if first {
				// The first high message: fenced by the reset, its handler
				// returns only once the lane runs again under its new grant.
				close(started)
				<-ctx.Done()
				<-release
				return nil
			}
			return log.handler(ctx, m)
		}})
	<-started
	epoch := func() int64 {
		for _, q := range c.Queues() {
			if q.QueueRef == high {
				return q.Epoch
			}
		}
		return -1
	}
	was := epoch()
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{high: 0}}))
	eventually(t, 10*time.Second, func() bool { now := epoch(); return now != was && now != -1 }, "the high lane granted anew")
	close(release)
	eventually(t, 10*time.Second, func() bool { return log.count() == 6 }, "every message handled")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, []string{"m-p1-0", "m-p1-1", "m-p1-2", "m-p0-0", "m-p0-1", "m-p0-2"}, log.body)
}
