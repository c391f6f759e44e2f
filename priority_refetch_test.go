package equeue_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// deletingFetch is an engine whose next FetchOffsets of topic's queues,
// once armed, finds the topic deleted: as when an operator deletes it
// while a consumer starts its freshly granted queues.
type deletingFetch struct {
	*equeue.Engine
	topic   string
	mu      sync.Mutex
	armed   bool
	deleted chan struct{}
}

func (d *deletingFetch) arm() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = true
}

func (d *deletingFetch) FetchOffsets(ctx context.Context, group, member string, queues []equeue.Grant) ([]equeue.OffsetCommit, error) {
	d.mu.Lock()
	fire := d.armed && slices.ContainsFunc(queues, func(g equeue.Grant) bool { return g.Topic == d.topic })
	d.armed = d.armed && !fire
	d.mu.Unlock()
	if fire {
		if err := d.DeleteTopic(ctx, d.topic); err != nil {
			return nil, err
		}
		defer close(d.deleted)
	}
	return d.Engine.FetchOffsets(ctx, group, member, queues)
}

// TestPriority_LanesOfAGrantThatFailedToStartHoldNothingBack: a consumer
// marks the lanes of fresh grants busy before it fetches their offsets;
// when that fetch fails (here the topic was deleted meanwhile) no runner
// starts, and the marks must not outlive the grant. The topic made again
// with fewer lanes has the same queue: a mark left on its former highest
// lane would hold its lower lanes back for good, and nothing of it would
// ever be handled.
func TestPriority_LanesOfAGrantThatFailedToStartHoldNothingBack(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	b := &deletingFetch{Engine: e, topic: "p", deleted: make(chan struct{})}
	log := &priorityLog{}
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}, Handler: log.handler})
	lanes := func() int {
		n := 0
		for _, q := range c.Queues() {
			if q.Topic == "p" {
				n++
			}
		}
		return n
	}
	eventually(t, 10*time.Second, func() bool { return lanes() == 3 }, "the three lanes granted")

	// A reset grants the lanes anew; the consumer's fetch of their
	// offsets finds the topic deleted.
	b.arm()
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	select {
	case <-b.deleted:
	case <-ctx.Done():
		t.Fatal("the consumer never fetched the offsets of its new grants")
	}

	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	sendPriorities(t, e, "p", 2, []int{0, 1}, "m")
	eventually(t, 20*time.Second, func() bool { return log.count() == 4 }, "handled %d of the 4 messages of the topic made again", func() any { return log.count() })
}
