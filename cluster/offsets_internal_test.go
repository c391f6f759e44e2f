package cluster

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func openMemBadger(t *testing.T) *store.Badger {
	t.Helper()
	bo := store.DefaultBadgerOptions()
	bo.InMemory = true
	st, err := store.OpenBadger("", &bo)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

func appends(q store.QueueID, offs ...uint64) *store.Batch {
	b := &store.Batch{}
	for _, o := range offs {
		b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: o, Value: []byte("v")})
	}
	return b
}

// apply checks b, and stores it and advances when it passes, as the FSM
// does; it returns the check's error.
func apply(t *testing.T, o *offsets, st *store.Badger, b *store.Batch) error {
	t.Helper()
	after, err := o.check(b, nil)
	if err != nil {
		return err
	}
	require.NoError(t, st.Write(b))
	o.advance(b, after)
	return nil
}

// TestOffsets_NextOffsetIsWhatTheStoreGives: a queue's next offset is one
// past its last record, or its watermark when higher (every record
// trimmed); a fresh offsets (a restarted node) and a long-lived one (which
// saw the deletion and the watermark) agree on it.
func TestOffsets_NextOffsetIsWhatTheStoreGives(t *testing.T) {
	st := openMemBadger(t)
	q := store.QueueID{Topic: 7, Queue: 2}
	live := newOffsets(st)
	require.NoError(t, apply(t, live, st, appends(q, 0, 1, 2)))
	assert.ErrorIs(t, apply(t, live, st, appends(q, 2)), errOffsetMismatch, "overlap")
	assert.ErrorIs(t, apply(t, live, st, appends(q, 4)), errOffsetMismatch, "gap")
	assert.ErrorIs(t, apply(t, live, st, appends(q, 3, 3)), errOffsetMismatch, "repeated")

	// Retention: the watermark goes to 3, then every record is deleted.
	wm := &store.Batch{Meta: []store.MetaOp{{Key: watermarkKey(q), Value: binary.BigEndian.AppendUint64(nil, 3)}}}
	require.NoError(t, apply(t, live, st, wm))
	require.NoError(t, st.DeleteRange(q, 0, 3))
	live.forget(q)
	for name, o := range map[string]*offsets{"live": live, "restarted": newOffsets(st)} {
		n, err := o.load(q)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), n, name)
		_, err = o.check(appends(q, 0), nil)
		assert.ErrorIs(t, err, errOffsetMismatch, "%s: an emptied queue does not start over", name)
	}
	require.NoError(t, apply(t, live, st, appends(q, 3, 4)))

	// A watermark written with no deletion (yet) is read back too.
	wm = &store.Batch{Meta: []store.MetaOp{{Key: watermarkKey(q), Value: binary.BigEndian.AppendUint64(nil, 9)}}}
	require.NoError(t, apply(t, live, st, wm))
	assert.ErrorIs(t, apply(t, live, st, appends(q, 5)), errOffsetMismatch)
	require.NoError(t, apply(t, live, st, appends(q, 9)))

	// Other queues are apart.
	require.NoError(t, apply(t, live, st, appends(store.QueueID{Topic: 7, Queue: 3}, 0)))
}

// TestOffsets_DelayLogMayLeaveHolesButNotOverlap: the delay log's slots
// only must not go back below what it holds, nor repeat within a batch.
func TestOffsets_DelayLogMayLeaveHolesButNotOverlap(t *testing.T) {
	st := openMemBadger(t)
	o := newOffsets(st)
	require.NoError(t, apply(t, o, st, appends(delayLog, 0, 1, 2)))
	require.NoError(t, apply(t, o, st, appends(delayLog, 5, 9)), "holes")
	assert.ErrorIs(t, apply(t, o, st, appends(delayLog, 9)), errOffsetMismatch, "overlap")
	assert.ErrorIs(t, apply(t, o, st, appends(delayLog, 11, 10)), errOffsetMismatch, "not increasing")
	// An engine that opens on an empty log starts at 0 again.
	require.NoError(t, st.DeleteRange(delayLog, 0, 10))
	o.forget(delayLog)
	require.NoError(t, apply(t, o, st, appends(delayLog, 0)))
}
