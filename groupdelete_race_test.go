package equeue_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// holdDeleteOf makes the store hold the first write that deletes a key
// starting with prefix until the returned release runs (also at the end of
// the test); inWrite is closed once it holds it. Other writes go through.
func holdDeleteOf(t *testing.T, r *faultRig, prefix string) (inWrite <-chan struct{}, release func()) {
	t.Helper()
	return holdWriteWhere(t, r, func(b *store.Batch) bool {
		return slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool { return op.Delete && bytes.HasPrefix(op.Key, []byte(prefix)) })
	})
}

// blockedOnLock reports whether a goroutine running fn waits for a mutex.
func blockedOnLock(fn string) bool { return goroutineIn(fn, "sync.(*Mutex).Lock") }

// groupExists reports whether e knows group name.
func groupExists(t *testing.T, e *equeue.Engine, name string) bool {
	t.Helper()
	_, err := e.Group(ctxBG, name)
	if errors.Is(err, equeue.ErrGroupNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestDeleteGroup_ResetRacingItStoresNoOrphanOffsets resets a group's
// offsets while DeleteGroup deletes it: the reset found the group before
// the delete removed it and waits for it. Either the reset is refused
// (ErrGroupNotFound) and the group is gone, or it made the group again;
// in both cases the engine and the store agree, so a reopen does not
// bring back a group the engine said was deleted.
func TestDeleteGroup_ResetRacingItStoresNoOrphanOffsets(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
			require.NoError(t, err)
			ref := equeue.QueueRef{Topic: "t", Queue: 0}
			require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 1}))

			inWrite, release := holdDeleteOf(t, r, "off/g\x00")
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
			<-inWrite // the group's offsets are being deleted; it is still listed

			reset := make(chan error, 1)
			go func() {
				reset <- e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{ref: 0}})
			}()
			eventually(t, 5*time.Second, func() bool {
				return blockedOnLock("ResetOffsets") || goroutineIn("ResetOffsets", "(*gateLock).lock") // the send-back gate
			}, "the reset waits for the delete")
			release()
			require.NoError(t, <-deleted)
			resetErr := <-reset
			if resetErr != nil {
				require.ErrorIs(t, resetErr, equeue.ErrGroupNotFound)
			}
			inEngine := groupExists(t, e, "g")
			assert.Equal(t, resetErr == nil, inEngine, "a reset that succeeded leaves the group; one refused does not (reset: %v)", resetErr)

			e = r.reopen()
			assert.Equal(t, inEngine, groupExists(t, e, "g"), "the group after a reopen, as the engine showed it before")
		})
	}
}

// TestDeleteGroup_CommitRacingItStoresNoOrphanOffsets commits a group's
// offsets from outside (CommitGroupOffsets) while DeleteGroup deletes it:
// the commit found the group before the delete removed it and waits
// behind it for the group's commit lock. The commit then makes the group
// again, so the engine shows the offset it stored, and a reopen shows the
// same.
func TestDeleteGroup_CommitRacingItStoresNoOrphanOffsets(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b")})
			require.NoError(t, err)
			ref := equeue.QueueRef{Topic: "t", Queue: 0}
			require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 1}))

			release := equeue.HoldGroupCommits(e, "g") // a commit in progress
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
			eventually(t, 5*time.Second, func() bool { return blockedOnLock("deleteGroupKeys") }, "the delete waits for the commit")
			committed := make(chan error, 1)
			go func() { committed <- e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 2}) }()
			eventually(t, 5*time.Second, func() bool { return blockedOnLock("commitGroupOffsets") }, "the commit waits behind the delete")
			release()
			require.NoError(t, <-deleted)
			require.NoError(t, <-committed)

			offsets := func(e *equeue.Engine) map[equeue.QueueRef]int64 {
				t.Helper()
				offs, err := e.GroupOffsets(ctx, "g")
				require.NoError(t, err)
				return offs
			}
			assert.Equal(t, map[equeue.QueueRef]int64{ref: 2}, offsets(e), "the engine shows the commit that came after the delete")
			e = r.reopen()
			assert.Equal(t, map[equeue.QueueRef]int64{ref: 2}, offsets(e), "after a reopen")
		})
	}
}
