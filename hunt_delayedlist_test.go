package equeue_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// While a due message's move is written but not yet synced (so not yet
// visible to pulls), Engine.Delayed must still list it: a message the
// engine acknowledged is either pending or in its queue, never neither.
// It used to vanish from both in that window, as the index key the
// listing reads is deleted by the very write that makes it visible.
func TestHunt_DelayedListsAMoveNotYetVisible(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	inSync, held := make(chan struct{}), make(chan struct{})
	release := func() {
		select {
		case <-held:
		default:
			close(held)
		}
	}
	t.Cleanup(release)
	var armed, once atomic.Bool
	r.FS.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && once.CompareAndSwap(false, true) {
			armed.Store(true)
		}
		return nil
	})
	r.FS.OnSync(func() error {
		if armed.CompareAndSwap(true, false) {
			close(inSync)
			<-held
		}
		return nil
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	<-inSync // the move is written, its fsync held
	pending, visible := pendingDelayed(t, r.E), len(queueBodies(t, r.E, "t", 0))
	release()
	assert.Equal(t, 1, pending+visible, "pending %d, visible %d: the message is in one place", pending, visible)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 0)) == 1 }, "visible once its fsync returned")
	assert.Equal(t, 0, pendingDelayed(t, r.E))
}
