package equeue_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// openParking sends a delayed message of 4 KiB with send to an engine on
// mem, closes it, and opens it again on a store whose writes hold at most
// 2 KiB, so that the scheduler parks the message's move once it is due.
// It returns that engine once the message is parked.
func openParking(t *testing.T, mem *store.Memory, send func(e *equeue.Engine, body []byte) error) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	require.NoError(t, send(e, bytes.Repeat([]byte("b"), 4096)))
	require.Zero(t, e.Stats().ParkedDelayedMessages, "not due yet")
	require.NoError(t, e.Close())

	var logs syncBuffer
	e, err = equeue.Open("", &equeue.Options{Store: faultstore.New(huntLimited{keepOpen{mem}, store.Limits{MaxBytes: 2048}}),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return strings.Contains(logs.String(), "too large") }, "parked as too large")
	return e
}

// A delayed message parked because no write of the store can hold its
// move is counted in Stats().ParkedDelayedMessages while it is stuck, and
// no longer once an engine opened on a store that takes it moved it.
// Before, nothing but one log line told that messages were stuck.
func TestStats_CountsParkedDelayedMessages(t *testing.T) {
	mem := store.NewMemory()
	e := openParking(t, mem, func(e *equeue.Engine, body []byte) error {
		if err := e.CreateTopic(ctxBG, "t", 1); err != nil {
			return err
		}
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: body, Delay: 200 * time.Millisecond}}})
		return err
	})
	assert.Equal(t, int64(1), e.Stats().ParkedDelayedMessages, "the message stuck is counted")
	assert.Equal(t, 1, pendingDelayed(t, e), "and pending")
	require.NoError(t, e.Close())

	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 1 }, "moved after the reopen")
	assert.Zero(t, e.Stats().ParkedDelayedMessages)
}

// A parked message goes from the count with its topic, at once.
func TestStats_ParkedDelayedMessagesGoWithTheirTopic(t *testing.T) {
	e := openParking(t, store.NewMemory(), func(e *equeue.Engine, body []byte) error {
		if err := e.CreateTopic(ctxBG, "t", 1); err != nil {
			return err
		}
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: body, Delay: 200 * time.Millisecond}}})
		return err
	})
	defer func() { require.NoError(t, e.Close()) }()
	require.Equal(t, int64(1), e.Stats().ParkedDelayedMessages)
	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	assert.Zero(t, e.Stats().ParkedDelayedMessages)
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 }, "dropped with its topic")
}

// A parked delayed retry of a group goes with the group: DeleteGroup
// deletes the index keys of the group's delayed retries itself, so the
// scheduler never came back to them, and the scheduler kept them parked
// (and counted) until a reopen.
func TestDeleteGroup_DropsItsParkedDelayedRetries(t *testing.T) {
	e := openParking(t, store.NewMemory(), func(e *equeue.Engine, body []byte) error {
		_, err := equeue.AppendInternal(ctxBG, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"),
			Messages: []*equeue.Message{{Body: body, Delay: 200 * time.Millisecond}}})
		return err
	})
	defer func() { require.NoError(t, e.Close()) }()
	require.Equal(t, int64(1), e.Stats().ParkedDelayedMessages)
	require.Equal(t, 1, pendingDelayed(t, e))

	require.NoError(t, e.DeleteGroup(ctxBG, "g", equeue.DeleteGroupOptions{}))
	assert.Equal(t, 0, pendingDelayed(t, e), "its index key went with the group")
	// A pass of the scheduler, brought by a message due to another topic,
	// leaves nothing parked either.
	require.NoError(t, e.CreateTopic(ctxBG, "u", 1))
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Topic: "u", Body: []byte("u"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "u", 0)) == 1 }, "the scheduler passed")
	assert.Zero(t, e.Stats().ParkedDelayedMessages, "nothing of the group is left parked")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// A parked message leaves the count when its topic is deleted, by the
// deletion itself: not by a pass of the scheduler, which may be busy
// (here held in the move of another topic's message).
func TestStats_ParkedDelayedMessagesLeaveWithTheDeletionNotAPass(t *testing.T) {
	e := openParking(t, store.NewMemory(), func(e *equeue.Engine, body []byte) error {
		if err := e.CreateTopic(ctxBG, "t", 1); err != nil {
			return err
		}
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: body, Delay: 200 * time.Millisecond}}})
		return err
	})
	defer func() { require.NoError(t, e.Close()) }()
	require.Equal(t, int64(1), e.Stats().ParkedDelayedMessages)

	require.NoError(t, e.CreateTopic(ctxBG, "u", 1))
	held, release := holdDelayMove(t, e)
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Topic: "u", Body: []byte("u"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	waitClosed(t, held, "the scheduler is held in a move")

	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	assert.Zero(t, e.Stats().ParkedDelayedMessages, "unparked by the deletion")
	release()
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 }, "dropped with its topic")
	assert.Equal(t, []string{"u"}, queueBodies(t, e, "u", 0))
}
