package equeue_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// isDelayMove reports whether b is a scheduler's move: a batch that
// deletes a delay index key ("d/...").
func isDelayMove(b *store.Batch) bool {
	return slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool {
		return op.Delete && bytes.HasPrefix(op.Key, []byte("d/"))
	})
}

// pendingDelayed is how many delayed messages e reports pending.
func pendingDelayed(t testing.TB, e *equeue.Engine) int {
	t.Helper()
	d, err := e.Delayed(ctxBG, 0)
	require.NoError(t, err)
	return d.Pending
}

// A delayed message due while the engine was closed is delivered after the
// reopen, once, and a second reopen neither delivers it again nor lists it
// pending.
func TestHunt_DelayedDueDuringDowntimeIsDeliveredOnce(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	at := time.Now().Add(200 * time.Millisecond)
	r, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), DeliverAt: at}}})
	require.NoError(t, err)
	require.True(t, r.Delayed)
	require.NoError(t, e.Close())
	for time.Now().Before(at.Add(50 * time.Millisecond)) { // due while closed
		time.Sleep(20 * time.Millisecond)
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) > 0 }, "due during the downtime, delivered after the reopen")
	assert.Equal(t, []string{"d"}, queueBodies(t, e, "t", 0))
	assert.Equal(t, 0, pendingDelayed(t, e))
	require.NoError(t, e.Close())
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.Equal(t, []string{"d"}, queueBodies(t, e, "t", 0), "delivered once")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// A move whose store write fails is not stored: the index key stays and
// the scheduler moves the message again, once.
func TestHunt_DelayedMoveWhoseWriteFailsIsDeliveredOnce(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	failed := make(chan struct{})
	var once bool
	r.FS.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && !once {
			once = true
			close(failed)
			return faultstore.ErrInjected
		}
		return nil
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	<-failed
	eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 0)) > 0 }, "moved again after the failed write")
	assert.Equal(t, []string{"d"}, queueBodies(t, r.E, "t", 0))
	assert.Equal(t, 0, pendingDelayed(t, r.E))
	assert.NoError(t, r.E.StoreFailure(), "a failed write is no failed fsync")
	e := r.reopen()
	assert.Equal(t, []string{"d"}, queueBodies(t, e, "t", 0), "delivered once across a reopen")
	assert.Equal(t, 0, pendingDelayed(t, e))
}

// A move whose fsync fails stops the engine's writes; after a reopen the
// message is in its queue once (the memory store kept the write) and no
// longer pending.
func TestHunt_DelayedMoveWhoseSyncFailsIsDeliveredOnceAfterReopen(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	moved := make(chan struct{})
	var once bool
	r.FS.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && !once {
			once = true
			r.FS.FailSyncs(1)
			close(moved)
		}
		return nil
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	<-moved
	eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the move's fsync failed")
	assert.Empty(t, queueBodies(t, r.E, "t", 0), "a move of unknown outcome is not shown")
	e := r.reopen()
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) > 0 }, "in its queue after the reopen")
	assert.Equal(t, []string{"d"}, queueBodies(t, e, "t", 0))
	assert.Equal(t, 0, pendingDelayed(t, e))
	e = r.reopen()
	assert.Equal(t, []string{"d"}, queueBodies(t, e, "t", 0), "once")
}

// A delayed send whose write fails is "not stored": it is never listed
// pending nor delivered, also after a reopen.
func TestHunt_DelayedSendWhoseWriteFailsIsNeverDelivered(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.FailWrites(1)
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("lost"), Delay: 30 * time.Millisecond}}})
	require.Error(t, err)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "a failed write stored nothing: %v", err)
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("kept"), Delay: 30 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 0)) > 0 }, "the second send is delivered")
	assert.Equal(t, 0, pendingDelayed(t, r.E))
	assert.Equal(t, []string{"kept"}, queueBodies(t, r.E, "t", 0))
	e := r.reopen()
	assert.Equal(t, 0, pendingDelayed(t, e))
	assert.Equal(t, []string{"kept"}, queueBodies(t, e, "t", 0))
}

// A delayed send whose fsync fails is "unknown": after a reopen it is
// either pending or delivered, never both, and delivered at most once.
func TestHunt_DelayedSendWhoseSyncFailsIsDeliveredAtMostOnce(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.FailSyncs(1)
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("u"), Delay: 300 * time.Millisecond}}})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	assert.Equal(t, 0, pendingDelayed(t, r.E), "an unknown send is not listed until a reopen")
	e := r.reopen()
	eventually(t, waitLong, func() bool { return pendingDelayed(t, e) == 0 && len(queueBodies(t, e, "t", 0)) == 1 },
		"the memory store kept it: it is delivered")
	e = r.reopen()
	assert.Equal(t, []string{"u"}, queueBodies(t, e, "t", 0))
}
