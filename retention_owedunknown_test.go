package equeue_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestRetention_CountOfLeftoversWhoseKeyMayStayIsNotKnownDurable: the
// pass that counts retention's deleted leftovers deletes what retention
// owed of the queue from the store first. When the fsync of that delete
// fails, the key may still be there after a crash, and a reopen would
// count the same messages again: the pass counts them (the delete reached
// the store and memory) but must say its outcome is unknown, with an
// error matching ErrIndeterminate. Before, it returned no error at all.
func TestRetention_CountOfLeftoversWhoseKeyMayStayIsNotKnownDurable(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
			require.NoError(t, err)
			late := time.Now().Add(time.Hour)
			r.FS.FailDeletes(1)
			_, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.Error(t, err)
			require.Equal(t, 1, metaKeys(t, r.FS, "owed/"), "what retention owes is stored")

			// The write that deletes the owed key is followed by a failed fsync.
			var hit atomic.Bool
			r.FS.OnWrite(func(b *store.Batch) error {
				for _, op := range b.Meta {
					if op.Delete && bytes.HasPrefix(op.Key, []byte("owed/")) && hit.CompareAndSwap(false, true) {
						r.FS.FailSyncs(1)
					}
				}
				return nil
			})
			res, err := equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
			require.True(t, hit.Load(), "the pass deleted the owed key")
			assert.Equal(t, int64(3), res.Deleted, "the leftovers are counted: their key's delete reached the store")
			assert.ErrorIs(t, err, equeue.ErrIndeterminate, "the key's delete may not be durable: a reopen may count them again")
		})
	}
}
