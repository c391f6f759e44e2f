package equeue_test

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// holdDelayMove holds the scheduler's first move of a delayed message
// once it is registered in flight, before it is queued: held is closed
// when it is, and the move goes on once release is called.
func holdDelayMove(t *testing.T, e *equeue.Engine) (held <-chan struct{}, release func()) {
	t.Helper()
	h, r := make(chan struct{}), make(chan struct{})
	var once, releaseOnce sync.Once
	equeue.OnDelayMoveQueued(e, func() {
		once.Do(func() {
			close(h)
			select {
			case <-r:
			case <-time.After(waitLong):
			}
		})
	})
	release = func() { releaseOnce.Do(func() { close(r) }) }
	t.Cleanup(release)
	return h, release
}

// A delayed message whose move is in flight when its topic is deleted is
// counted by Delayed, under an empty topic name, until the scheduler drops
// it: the count of a deleted topic only goes down. Delayed used to skip
// every in-flight move of a deleted topic, so the message left the count
// at the deletion and came back into it once the writer refused its move
// (its index key back in place), until the scheduler dropped it.
func TestDelayed_InFlightMoveOfDeletedTopicCountOnlyGoesDown(t *testing.T) {
	var logs syncBuffer
	r := newFaultRig(t, "memory", &equeue.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e := r.E
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	held, release := holdDelayMove(t, e)
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	waitClosed(t, held, "the move is in flight")

	d, err := e.Delayed(ctxBG, 0)
	require.NoError(t, err)
	require.Equal(t, 1, d.Pending)
	require.Equal(t, "t", d.Next[0].Topic)

	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	d, err = e.Delayed(ctxBG, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, d.Pending, "still in flight after the deletion: counted until dropped")
	if assert.Len(t, d.Next, 1) {
		assert.Equal(t, "", d.Next[0].Topic, "its topic is deleted")
	}

	release()
	last := d.Pending
	eventually(t, waitLong, func() bool {
		dropped := strings.Contains(logs.String(), "delayed message dropped")
		n := pendingDelayed(t, e)
		require.LessOrEqual(t, n, last, "the count of a deleted topic rose again")
		last = n
		return dropped && n == 0
	}, "the scheduler dropped it with its topic")
}

// A delayed message whose move is in flight while its topic is deleted and
// made again under its name does not land in the new topic: the move is of
// the deleted topic's queue, and the message is dropped with that topic.
// Delayed does not count it for the new topic either.
func TestDelayed_InFlightMoveDoesNotLandInTopicMadeAgain(t *testing.T) {
	var logs syncBuffer
	r := newFaultRig(t, "memory", &equeue.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e := r.E
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	held, release := holdDelayMove(t, e)
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("old"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	waitClosed(t, held, "the move is in flight")

	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	release()
	eventually(t, waitLong, func() bool { return strings.Contains(logs.String(), "delayed message dropped") }, "the scheduler dropped it")
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 }, "no longer pending")

	// A message sent to the new topic lands there, alone.
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("new"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) > 0 }, "the new topic's message moved")
	assert.Equal(t, []string{"new"}, queueBodies(t, e, "t", 0), "only the new topic's message")
	assert.Equal(t, 0, pendingDelayed(t, e))
}
