package equeue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// heldReadStore holds the reads of one queue, once armed, until open is
// called.
type heldReadStore struct {
	Store
	queue atomic.Pointer[store.QueueID] // the queue whose reads are held
	held  chan struct{}                 // closed when a read is held
	gate  chan struct{}                 // closed by open
	onceH sync.Once
	onceG sync.Once
}

func (s *heldReadStore) open() { s.onceG.Do(func() { close(s.gate) }) }

func (s *heldReadStore) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	if held := s.queue.Load(); held != nil && *held == q {
		s.onceH.Do(func() { close(s.held) })
		<-s.gate
	}
	return s.Store.Read(q, from, to, max, maxBytes)
}

// laneBusyOn reports whether c's board says that lane of queue 0 of topic
// is busy.
func laneBusyOn(c *Consumer, topic string, lane int) bool {
	c.lanes.mu.Lock()
	defer c.lanes.mu.Unlock()
	return c.lanes.busy[laneKey{topic: topic, queue: 0}][lane].busy
}

// TestPriority_ResumedLaneIsBusyBeforeItsPull: a parked higher lane that an
// append resumes has a message stored beyond what it pulled, so it is busy
// from its resumption on: a lower lane resumed meanwhile waits for the
// higher lane's pull (held here in the store) instead of handing its
// message out first.
func TestPriority_ResumedLaneIsBusyBeforeItsPull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := &heldReadStore{Store: store.NewMemory(), held: make(chan struct{}), gate: make(chan struct{})}
	e, err := Open("", &Options{Store: s})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	t.Cleanup(s.open) // runs first: nothing stays held
	require.NoError(t, e.CreateTopicWith(ctx, "p", TopicOptions{Queues: 1, Priorities: 2}))
	tp, ok := e.lookupTopic("p")
	require.True(t, ok)

	var mu sync.Mutex
	var handled []string
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", Subscriptions: []Subscription{{Topic: "p"}}, Orderly: true,
		HeartbeatInterval: 200 * time.Millisecond,
		Handler: func(_ context.Context, m *Message) error {
			mu.Lock()
			handled = append(handled, string(m.Body))
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { _ = c.Close() })
	waitFor(t, func() bool { return c.parkedCount() == 2 }, "both lanes parked at their end")

	s.queue.Store(&store.QueueID{Topic: tp.id, Queue: 1})
	_, err = e.Append(ctx, &AppendRequest{Topic: "p", Queue: 1, Messages: []*Message{{Body: []byte("high")}}})
	require.NoError(t, err)
	<-s.held // the resumed high lane's first pull is under way
	assert.True(t, laneBusyOn(c, "p", 1), "the resumed high lane is busy before its first pull returns")

	_, err = e.Append(ctx, &AppendRequest{Topic: "p", Queue: 0, Messages: []*Message{{Body: []byte("low")}}})
	require.NoError(t, err)
	// The low lane pulls its message and then either waits for its turn
	// (a waiter on the board) or, wrongly, hands it to the handler.
	waitFor(t, func() bool {
		mu.Lock()
		n := len(handled)
		mu.Unlock()
		c.lanes.mu.Lock()
		waiting := c.lanes.changed != nil
		c.lanes.mu.Unlock()
		return n > 0 || waiting
	}, "the low lane's message is handled or waits")
	mu.Lock()
	assert.Empty(t, handled, "nothing handled while the high lane's first pull is held")
	mu.Unlock()

	s.open()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 2 }, "both messages handled")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"high", "low"}, handled)
}
