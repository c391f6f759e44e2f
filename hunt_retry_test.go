package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// huntRuns records the attempts a handler saw, per message body.
type huntRuns struct {
	mu   sync.Mutex
	runs map[string][]int
}

func (h *huntRuns) add(m *equeue.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.runs == nil {
		h.runs = map[string][]int{}
	}
	h.runs[string(m.Body)] = append(h.runs[string(m.Body)], m.Attempt)
}

func (h *huntRuns) of(body string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.runs[body]...)
}

// A retry whose backoff runs out while the engine is closed is delivered
// after the reopen, once, as the next attempt; the first attempt is not
// run again.
func TestHunt_RetryBackoffAcrossReopenDeliversOnce(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	var h huntRuns
	handler := func(_ context.Context, m *equeue.Message) error {
		h.add(m)
		if m.Attempt == 0 && string(m.Body) == "job" {
			return errors.New("first attempt fails")
		}
		return nil
	}
	o := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryDelays: []time.Duration{300 * time.Millisecond}, Handler: handler}
	c, err := equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("job")}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 1 }, "the retry waits in the delay log")
	require.NoError(t, c.Close())
	require.NoError(t, e.Close())
	time.Sleep(400 * time.Millisecond) // the backoff runs out while closed

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	c, err = equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	defer func() { require.NoError(t, c.Close()) }()
	eventually(t, waitLong, func() bool { return len(h.of("job")) >= 2 }, "the retry is delivered after the reopen")
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("after")}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(h.of("after")) == 1 }, "a later message is handled")
	assert.Equal(t, []int{0, 1}, h.of("job"), "each attempt once")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// A message whose TTL runs out during its retry's backoff (here across a
// close and reopen of the engine) is not handed to the handler again, is
// not dead-lettered, and is counted expired.
func TestHunt_TTLRunningOutDuringTheRetryBackoffAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	var h huntRuns
	o := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryDelays: []time.Duration{time.Second}, MaxAttempts: 2,
		Handler: func(_ context.Context, m *equeue.Message) error {
			h.add(m)
			if string(m.Body) == "short" {
				return errors.New("always fails")
			}
			return nil
		}}
	c, err := equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	r, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("short"), TTL: 500 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 1 }, "the retry waits in the delay log")
	require.NoError(t, c.Close())
	require.NoError(t, e.Close())
	deadline := r.StoredAt.Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) { // expired and due while closed
		time.Sleep(50 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	c, err = equeue.NewConsumer(e, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	defer func() { require.NoError(t, c.Close()) }()
	eventually(t, waitLong, func() bool { return e.Stats().ExpiredMessages == 1 }, "the expired retry is counted")
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("after")}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(h.of("after")) == 1 }, "a later message is handled")
	assert.Equal(t, []int{0}, h.of("short"), "never handed out once expired")
	dl, err := e.ListDeadLetters(ctxBG, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Empty(t, dl, "an expired message is not a dead letter")
}

// A delayed message of a priority lane, due during a downtime, lands in
// its lane after the reopen and keeps its priority.
func TestHunt_DelayedPriorityMessageDueDuringDowntimeKeepsItsLane(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, Priorities: 3}))
	at := time.Now().Add(200 * time.Millisecond)
	p := newProducer(t, e, nil)
	for i, prio := range []int{2, 0} {
		_, err := p.Send(ctxBG, &equeue.Message{Topic: "t", Body: []byte{'a' + byte(i)}, Priority: prio, DeliverAt: at})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	require.NoError(t, e.Close())
	for time.Now().Before(at.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 && len(queueBodies(t, e, "t", 0)) == 1 }, "both moved")
	assert.Equal(t, []string{"b"}, queueBodies(t, e, "t", 0), "priority 0 in lane 0")
	assert.Empty(t, queueBodies(t, e, "t", 1))
	assert.Equal(t, []string{"a"}, queueBodies(t, e, "t", 2), "priority 2 in lane 2")
	var h huntRuns
	var prios sync.Map
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			prios.Store(string(m.Body), m.Priority)
			h.add(m)
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxBG))
	defer func() { require.NoError(t, c.Close()) }()
	eventually(t, waitLong, func() bool { return len(h.of("a")) == 1 && len(h.of("b")) == 1 }, "both handled")
	pa, _ := prios.Load("a")
	pb, _ := prios.Load("b")
	assert.Equal(t, 2, pa)
	assert.Equal(t, 0, pb)
}

// A delayed send on a dedup topic, due during a downtime: a resend of its
// ID after the reopen is answered as the delayed send was, and the message
// is stored once.
func TestHunt_DelayedDedupSendDueDuringDowntime(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	at := time.Now().Add(200 * time.Millisecond)
	first, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", ID: "x", Body: []byte("x"), DeliverAt: at}}})
	require.NoError(t, err)
	require.True(t, first.Delayed)
	require.NoError(t, e.Close())
	for time.Now().Before(at.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 1 }, "moved")
	again, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", ID: "x", Body: []byte("x")}}})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.True(t, again.Delayed)
	assert.Equal(t, first.StoredAt, again.StoredAt)
	assert.Equal(t, []string{"x"}, queueBodies(t, e, "t", 0), "stored once")
}

// A rejecting topic limit: a delayed message accepted while the topic had
// room becomes visible past the limit when it comes due during a
// downtime, as documented, and the next send is refused.
func TestHunt_DelayedPastARejectingLimitAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: 1, Overflow: equeue.OverflowReject}}))
	at := time.Now().Add(200 * time.Millisecond)
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("late"), DeliverAt: at}}})
	require.NoError(t, err)
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("now")}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	for time.Now().Before(at.Add(50 * time.Millisecond)) {
		time.Sleep(20 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 2 }, "moved")
	assert.Equal(t, []string{"now", "late"}, queueBodies(t, e, "t", 0), "a due delayed message is never refused")
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("more")}}})
	assert.ErrorIs(t, err, equeue.ErrTopicFull)
}
