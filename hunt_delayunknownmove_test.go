package equeue_test

import (
	"bytes"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A move whose write reached the store but whose fsync failed is of
// unknown outcome: Delayed keeps counting it until a reopen, under its
// topic's name. Once that topic is deleted its message went with it
// (moved into a queue of the topic, or pending for a topic no longer
// there), and Delayed no longer counts it: it used to list it, until a
// reopen, under an empty topic name.
func TestHunt_DelayedDropsAMoveOfUnknownOutcomeOnceItsTopicIsDeleted(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	moveWritten, deleteWritten := make(chan struct{}), make(chan struct{})
	var moved, deleted, armed atomic.Bool
	r.FS.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && moved.CompareAndSwap(false, true) {
			armed.Store(true)
			close(moveWritten)
		}
		if moved.Load() && slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool {
			return op.Delete && bytes.Equal(op.Key, []byte("topic/t"))
		}) && deleted.CompareAndSwap(false, true) {
			close(deleteWritten)
		}
		return nil
	})
	r.FS.OnSync(func() error {
		if !armed.CompareAndSwap(true, false) {
			return nil
		}
		// The move is written; hold its fsync until the topic's deletion
		// is written behind it, then fail it: both are of unknown outcome.
		select {
		case <-deleteWritten:
		case <-time.After(waitLong):
		}
		return faultstore.ErrInjected
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	waitClosed(t, moveWritten, "the move is written")
	d, err := r.E.Delayed(ctxBG, 0)
	require.NoError(t, err)
	require.Equal(t, 1, d.Pending, "the move in flight is listed")
	require.Equal(t, "t", d.Next[0].Topic)

	err = r.E.DeleteTopic(ctxBG, "t")
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "the deletion was written before the failed fsync")
	waitClosed(t, deleteWritten, "the deletion was written behind the move")
	eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the move's fsync failed")

	d, err = r.E.Delayed(ctxBG, 0)
	require.NoError(t, err)
	assert.Equal(t, 0, d.Pending, "listed: %+v", d.Next)
	assert.Empty(t, d.Next)
}
