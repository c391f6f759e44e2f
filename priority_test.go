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

// priorityLog records the priority of each handled message, in handling order.
type priorityLog struct {
	mu    sync.Mutex
	prios []int
	body  []string
}

func (l *priorityLog) handler(_ context.Context, m *equeue.Message) error {
	l.mu.Lock()
	l.prios = append(l.prios, m.Priority)
	l.body = append(l.body, string(m.Body))
	l.mu.Unlock()
	return nil
}

func (l *priorityLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.prios)
}

// sendPriorities sends n messages of each priority in prios, interleaved
// lowest first, all with one key (one queue).
func sendPriorities(t *testing.T, b equeue.Broker, topic string, n int, prios []int, tag string) {
	t.Helper()
	p := newProducer(t, b, nil)
	for i := range n {
		for _, pr := range prios {
			_, err := p.Send(ctxT(t), &equeue.Message{Topic: topic, Keys: []string{"k"}, Priority: pr,
				Body: fmt.Appendf(nil, "%s-p%d-%d", tag, pr, i)})
			require.NoError(t, err)
		}
	}
}

// TestPriority_BacklogHigherFirst: with a backlog of three priorities in
// one queue, every message of a higher priority is handled before any of a
// lower one, and each lane keeps its own order.
func TestPriority_BacklogHigherFirst(t *testing.T) { forTransports(t, testPriority_BacklogHigherFirst) }

func testPriority_BacklogHigherFirst(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 3}))
	info, err := e.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, 3, info.Priorities)
	assert.Len(t, info.Queues, 6, "two queues of three lanes")
	const n = 40
	sendPriorities(t, b, "p", n, []int{0, 1, 2}, "m") // the lowest first
	for _, batch := range []bool{false, true} {
		log := &priorityLog{}
		o := equeue.ConsumerOptions{Group: fmt.Sprintf("g-%v", batch), Subscriptions: []equeue.Subscription{{Topic: "p"}},
			Concurrency: 1, PullBatch: 8}
		if batch {
			o.BatchSize = 4
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error {
				for _, m := range msgs {
					_ = log.handler(ctx, m)
				}
				return nil
			}
		} else {
			o.Handler = log.handler
		}
		startConsumer(t, b, o)
		eventually(t, 30*time.Second, func() bool { return log.count() == 3*n }, "every message handled")
		log.mu.Lock()
		want := slices.Clone(log.prios)
		slices.SortStableFunc(want, func(a, b int) int { return b - a })
		assert.Equal(t, want, log.prios, "batch=%v: higher priorities first", batch)
		for _, pr := range []int{0, 1, 2} { // per lane order
			var got []string
			for i, p := range log.prios {
				if p == pr {
					got = append(got, log.body[i])
				}
			}
			var exp []string
			for i := range n {
				exp = append(exp, fmt.Sprintf("m-p%d-%d", pr, i))
			}
			assert.Equal(t, exp, got, "batch=%v: lane %d in send order", batch, pr)
		}
		log.mu.Unlock()
	}
}

// TestPriority_RestartResumesEachLane: each lane has its own committed
// offset: after a restart of the engine a group resumes every lane where
// it stopped, and the topic keeps its priorities.
func TestPriority_RestartResumesEachLane(t *testing.T) {
	forTransports(t, testPriority_RestartResumesEachLane)
}

func testPriority_RestartResumesEachLane(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b, restart := openOverRestartable(t, tr, nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	sendPriorities(t, b, "p", 5, []int{0, 1}, "old")
	var first priorityLog
	opts := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}, Concurrency: 1}
	opts.Handler = first.handler
	c := startConsumer(t, b, opts)
	eventually(t, 30*time.Second, func() bool { return first.count() == 10 }, "the first messages handled")
	require.NoError(t, c.Close())

	e, b = restart()
	info, err := e.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Equal(t, 2, info.Priorities, "priorities survive a restart")
	sendPriorities(t, b, "p", 3, []int{0, 1}, "new")
	var second priorityLog
	opts.Handler = second.handler
	startConsumer(t, b, opts)
	eventually(t, 30*time.Second, func() bool { return second.count() == 6 }, "the new messages handled")
	second.mu.Lock()
	defer second.mu.Unlock()
	assert.Equal(t, []string{"new-p1-0", "new-p1-1", "new-p1-2", "new-p0-0", "new-p0-1", "new-p0-2"}, second.body,
		"each lane resumed after its committed offset, the higher lane first")
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "p" {
			assert.Equal(t, int64(8), q.MaxOffset, "lane %d", q.Queue)
		}
	}
}

// TestPriority_RoutingAndLanesAllocatedTogether: a priority beyond the
// lanes is taken as the highest, the key picks the queue, AddQueues adds
// every lane of a queue, and a group gives all lanes of a queue to one
// member.
func TestPriority_RoutingAndLanesAllocatedTogether(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 3}))
	assert.ErrorIs(t, e.CreateTopicWith(ctx, "bad", equeue.TopicOptions{Priorities: equeue.MaxPriorities + 1}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.CreateTopicWith(ctx, "bad", equeue.TopicOptions{Queues: 100, Priorities: 3}), equeue.ErrInvalidArgument, "300 queue IDs")
	p := newProducer(t, e, nil)
	lo, err := p.Send(ctx, &equeue.Message{Topic: "p", Keys: []string{"k"}, Priority: -5, Body: []byte("x")})
	require.NoError(t, err)
	hi, err := p.Send(ctx, &equeue.Message{Topic: "p", Keys: []string{"k"}, Priority: 99, Body: []byte("x")})
	require.NoError(t, err)
	assert.Equal(t, 0, lo.Queue%3, "below 0: the lowest lane")
	assert.Equal(t, 2, hi.Queue%3, "above the lanes: the highest lane")
	assert.Equal(t, lo.Queue/3, hi.Queue/3, "one key, one queue")
	require.NoError(t, e.AddQueues(ctx, "p", 1))
	info, err := e.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Len(t, info.Queues, 9, "one more queue of three lanes")

	var cs []*equeue.Consumer
	for _, id := range []string{"a", "b"} {
		cs = append(cs, startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: id,
			Subscriptions: []equeue.Subscription{{Topic: "p"}}, Handler: func(context.Context, *equeue.Message) error { return nil }}))
	}
	// lanesByQueue counts, per queue of p, the lanes c owns.
	lanesByQueue := func(c *equeue.Consumer) map[int]int {
		byQueue := map[int]int{}
		for _, r := range refsOf(c) {
			if r.Topic == "p" {
				byQueue[r.Queue/3]++
			}
		}
		return byQueue
	}
	// While b joins, a hands its lanes over one by one, so a split shows
	// for a moment; once the group settles, every queue's lanes are with
	// one member.
	eventually(t, 10*time.Second, func() bool {
		if countTopic(refsOf(cs[0]), "p")+countTopic(refsOf(cs[1]), "p") != 9 {
			return false
		}
		for _, c := range cs {
			for _, lanes := range lanesByQueue(c) {
				if lanes != 3 {
					return false
				}
			}
		}
		return true
	}, "all nine lanes owned, each queue's lanes by one member")
	for _, c := range cs {
		for q, lanes := range lanesByQueue(c) {
			assert.Equal(t, 3, lanes, "member %s owns every lane of queue %d", c.ID(), q)
		}
	}
}

func refsOf(c *equeue.Consumer) []equeue.QueueRef {
	var out []equeue.QueueRef
	for _, q := range c.Queues() {
		out = append(out, q.QueueRef)
	}
	return out
}

// TestPriority_RetriedMessageKeepsItsPriority: a message retried through
// the retry topic is handled again with the priority of its lane.
func TestPriority_RetriedMessageKeepsItsPriority(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 4}))
	var mu sync.Mutex
	var seen []string
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("attempt %d priority %d", m.Attempt, m.Priority))
			mu.Unlock()
			if m.Attempt == 0 {
				return fmt.Errorf("once more")
			}
			return nil
		}})
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "p", Priority: 2, Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 }, "handled twice")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"attempt 0 priority 2", "attempt 1 priority 2"}, seen)
}

// TestPriority_HandoverMovesLanesTogether: a member hands a queue with
// priorities over while a handler of its high lane still runs and its low
// lane has nothing running. The lanes must move together: if the low lane
// were released first, the new owner would handle its backlog while the
// high lane's backlog waits for the old owner's handler, and a lower
// priority would go first.
func TestPriority_HandoverMovesLanesTogether(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	running, lowHandled := make(chan struct{}), make(chan struct{})
	var runOnce, lowOnce sync.Once
	// b's only worker is held by the high lane's first message until a
	// handled a low-priority message or the handover's wait cancels it.
	b := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "b", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		Concurrency: 1, HandoffTimeout: time.Second, CommitInterval: time.Hour,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			runOnce.Do(func() { close(running) })
			select {
			case <-lowHandled:
			case <-ctx.Done():
			}
			return nil
		}})
	p := newProducer(t, e, nil)
	send := func(prio int, body string) {
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Keys: []string{"k"}, Priority: prio, Body: []byte(body)})
		require.NoError(t, err)
	}
	send(1, "held")
	<-running
	send(1, "high")
	send(0, "low")
	var log priorityLog
	a := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "p"}},
		Concurrency: 1, CommitInterval: time.Hour,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if m.Priority == 0 {
				lowOnce.Do(func() { close(lowHandled) })
			}
			return log.handler(ctx, m)
		}})
	eventually(t, 30*time.Second, func() bool { return log.count() == 2 }, "a handles both messages b left")
	require.NoError(t, b.Close())
	require.NoError(t, a.Close())
	assert.Equal(t, []string{"high", "low"}, log.body, "the high lane's backlog first")
}
