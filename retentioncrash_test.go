package equeue_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// firstTopicQueue0 is the store's ID of queue 0 of the first topic an
// engine creates (topic IDs count from 1).
var firstTopicQueue0 = store.QueueID{Topic: 1, Queue: 0}

// storedBelow reports whether the store still holds a record of q below off.
func storedBelow(t testing.TB, s interface {
	Bounds(store.QueueID) (uint64, uint64, bool, error)
}, q store.QueueID, off uint64) bool {
	t.Helper()
	first, _, ok, err := s.Bounds(q)
	require.NoError(t, err)
	return ok && first < off
}

// TestRetention_FailedDeleteIsSweptLater fails the range delete of a
// retention pass after the watermark was raised: the next pass (in the same
// process) deletes what was left, and offsets are never reused.
func TestRetention_FailedDeleteIsSweptLater(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			fillQueue(t, e, "t", 100)

			f.FS.FailDeletes(1)
			_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
			require.ErrorIs(t, err, faultstore.ErrInjected)
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(100), info.Queues[0].MinOffset, "the watermark was stored before the delete")
			require.True(t, storedBelow(t, f.FS, firstTopicQueue0, 100), "the failed delete left the records")

			// A pass with nothing new to delete still finishes the old delete.
			res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1})
			require.NoError(t, err)
			assert.Equal(t, int64(100), res.Deleted)
			assert.False(t, storedBelow(t, f.FS, firstTopicQueue0, 100), "nothing is left below the watermark")

			p := newProducer(t, e, nil)
			r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("next")})
			require.NoError(t, err)
			assert.Equal(t, int64(100), r.Offset, "offsets are not reused")
			if kind == "badger" {
				e = f.reopen()
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				assert.Equal(t, int64(100), info.Queues[0].MinOffset)
				assert.Equal(t, int64(101), info.Queues[0].MaxOffset)
			}
		})
	}
}

// TestRetention_InterruptedDeleteRepairedOnOpen leaves records below a
// stored watermark, as a process killed between the two steps of a
// retention pass does, and reopens: open deletes them.
func TestRetention_InterruptedDeleteRepairedOnOpen(t *testing.T) {
	ctx := ctxT(t)

	t.Run("failed delete, then restart", func(t *testing.T) {
		f := newFaultRig(t, "badger", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
		require.NoError(t, f.E.CreateTopic(ctx, "t", 1))
		fillQueue(t, f.E, "t", 100)
		f.FS.FailDeletes(1)
		_, err := f.E.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
		require.ErrorIs(t, err, faultstore.ErrInjected)
		require.True(t, storedBelow(t, f.FS, firstTopicQueue0, 100))

		e := f.reopen()
		assert.False(t, storedBelow(t, f.FS, firstTopicQueue0, 100), "open deleted the records below the watermark")
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(100), info.Queues[0].MinOffset)
		assert.Equal(t, int64(100), info.Queues[0].MaxOffset, "the next offset survives with no record left")
	})

	t.Run("watermark written, delete never ran", func(t *testing.T) {
		f := newFaultRig(t, "badger", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
		require.NoError(t, f.E.CreateTopic(ctx, "t", 1))
		fillQueue(t, f.E, "t", 100)
		// Write the intermediate state directly: the watermark key is
		// "wm/" + topic ID + queue ID (big-endian uint32s), its value a
		// big-endian uint64.
		key := binary.BigEndian.AppendUint32([]byte("wm/"), firstTopicQueue0.Topic)
		key = binary.BigEndian.AppendUint32(key, firstTopicQueue0.Queue)
		require.NoError(t, f.FS.Write(&store.Batch{Meta: []store.MetaOp{{Key: key, Value: binary.BigEndian.AppendUint64(nil, 60)}}}))
		require.NoError(t, f.FS.Sync())

		e := f.reopen()
		assert.False(t, storedBelow(t, f.FS, firstTopicQueue0, 60), "open deleted the records below the watermark")
		assert.True(t, storedBelow(t, f.FS, firstTopicQueue0, 61), "and kept the rest")
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(60), info.Queues[0].MinOffset)
		assert.Equal(t, int64(100), info.Queues[0].MaxOffset)
		pr, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 60})
		require.NoError(t, err)
		require.NotEmpty(t, pr.Messages)
		assert.Equal(t, "m0000060", string(pr.Messages[0].Body))
	})
}

// TestRetention_FailedWatermarkWrite: a watermark write that fails changes
// nothing; one whose fsync fails is applied (the store holds it) but
// deletes nothing until a later pass.
func TestRetention_FailedWatermarkWrite(t *testing.T) {
	ctx := ctxT(t)
	f := newFaultRig(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	e := f.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fillQueue(t, e, "t", 100)
	minOffset := func() int64 {
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		return info.Queues[0].MinOffset
	}

	f.FS.FailWrites(1)
	_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.ErrorIs(t, err, faultstore.ErrInjected)
	assert.Equal(t, int64(0), minOffset(), "a failed watermark write moves nothing")
	assert.True(t, storedBelow(t, f.FS, firstTopicQueue0, 1))

	f.FS.FailSyncs(1)
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.ErrorIs(t, err, faultstore.ErrInjected)
	assert.Equal(t, int64(100), minOffset(), "the stored watermark shows")
	assert.True(t, storedBelow(t, f.FS, firstTopicQueue0, 100), "nothing deleted while the watermark may not be durable")

	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1})
	require.NoError(t, err)
	assert.False(t, storedBelow(t, f.FS, firstTopicQueue0, 100), "the next pass deleted the records")
}
