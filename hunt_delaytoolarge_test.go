package equeue_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A due message whose move no write of the store can hold (its limits
// shrank since the send) is never lost: it stays pending, listed by
// Delayed, reported once at error level, and moved after a reopen on a
// store that takes it. The messages due with it to its queue go on in
// their order, the moves queued after it waiting for the one before it.
// It used to make every pass of the scheduler fail, logging it again
// each time.
func TestHunt_DelayedMoveTooLargeForAnyWriteStaysPendingAndReported(t *testing.T) {
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	at := time.Now().Add(time.Second)
	big := bytes.Repeat([]byte("b"), 4096)
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Topic: "t", Body: []byte("A"), DeliverAt: at},
		{Topic: "t", Body: big, DeliverAt: at},
		{Topic: "t", Body: []byte("C"), DeliverAt: at},
	}})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.Zero(t, storedIn(t, mem), "closed before they came due")

	// Writes of at most 2 KiB, and one move a write; the first move's
	// write, A's, is refused once: C must not land ahead of it.
	fs := faultstore.New(huntLimited{keepOpen{mem}, store.Limits{MaxEntries: 8, MaxBytes: 2048}})
	var refused atomic.Bool
	fs.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && refused.CompareAndSwap(false, true) {
			return faultstore.ErrInjected
		}
		return nil
	})
	var logs syncBuffer
	e, err = equeue.Open("", &equeue.Options{Store: fs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 2 }, "A and C moved")
	assert.Equal(t, []string{"A", "C"}, queueBodies(t, e, "t", 0), "in their order")
	// A message due later is moved by a later pass, which passes over the
	// one too large.
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("D"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 3 }, "D moved")
	assert.Equal(t, []string{"A", "C", "D"}, queueBodies(t, e, "t", 0))
	d, err := e.Delayed(ctxBG, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Pending, "the message too large to move is pending")
	if assert.Len(t, d.Next, 1) {
		assert.Equal(t, equeue.QueueRef{Topic: "t", Queue: 0}, d.Next[0].QueueRef)
		assert.True(t, d.Next[0].DeliverAt.Equal(at), "due at %v, listed %v", at, d.Next[0].DeliverAt)
	}
	var reports []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") && strings.Contains(l, "too large") {
			reports = append(reports, l)
		}
	}
	assert.Len(t, reports, 1, "reported once: %v", reports)
	require.NoError(t, e.Close())

	// A store that takes it: it is moved, once.
	e, err = equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 4 }, "moved after the reopen")
	assert.Equal(t, []string{"A", "C", "D", string(big)}, queueBodies(t, e, "t", 0))
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// storedIn is how many records the queue of the first topic made (ID 1,
// queue 0) holds in mem.
func storedIn(t testing.TB, mem *store.Memory) int {
	t.Helper()
	recs, err := mem.Read(store.QueueID{Topic: 1, Queue: 0}, 0, 1<<20, 1<<20, 0)
	require.NoError(t, err)
	return len(recs)
}

// A message parked as too large to move goes with its topic: once the
// topic is deleted the scheduler drops it as any message of a deleted
// topic, and Delayed no longer lists it (under an empty topic name).
func TestHunt_DelayedMoveTooLargeForAnyWriteGoesWithItsTopic(t *testing.T) {
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Topic: "t", Body: bytes.Repeat([]byte("b"), 4096), Delay: 200 * time.Millisecond},
	}})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	var logs syncBuffer
	e, err = equeue.Open("", &equeue.Options{Store: faultstore.New(huntLimited{keepOpen{mem}, store.Limits{MaxBytes: 2048}}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return strings.Contains(logs.String(), "too large") }, "parked as too large")
	require.Equal(t, 1, pendingDelayed(t, e))
	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	// A message due to another topic wakes the scheduler for a pass.
	require.NoError(t, e.CreateTopic(ctxBG, "u", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Topic: "u", Body: []byte("u"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "u", 0)) == 1 }, "the scheduler passed")
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 }, "dropped with its topic")
}

// Deleting the topic of a message parked as too large to move drops it
// without waiting for a pass of the scheduler that something else would
// bring: with nothing else pending, the scheduler slept a minute, and
// Delayed listed the message (under an empty topic name) meanwhile.
func TestHunt_DelayedMoveTooLargeForAnyWriteGoesWithItsTopicAlone(t *testing.T) {
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Topic: "t", Body: bytes.Repeat([]byte("b"), 4096), Delay: 200 * time.Millisecond},
	}})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	var logs syncBuffer
	e, err = equeue.Open("", &equeue.Options{Store: faultstore.New(huntLimited{keepOpen{mem}, store.Limits{MaxBytes: 2048}}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return strings.Contains(logs.String(), "too large") }, "parked as too large")
	require.Equal(t, 1, pendingDelayed(t, e))
	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 }, "dropped with its topic")
	eventually(t, waitLong, func() bool { return strings.Contains(logs.String(), "delayed message dropped") }, "the scheduler dropped it")
}
