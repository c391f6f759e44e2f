package store

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWrite_RewritesBeyondATransaction: one small overwrite in each of
// many segments is within Limits, which count what the batch carries, but
// each rewrites its whole segment in the same transaction, more in all
// than Badger takes. Write refuses it as ErrBatchTooLarge, saying why,
// and stores none of it; the same overwrites in smaller batches go in.
func TestWrite_RewritesBeyondATransaction(t *testing.T) {
	o := DefaultBadgerOptions()
	o.MemTableSize = 1 << 20 // a transaction of at most 15% of it
	s, err := OpenBadger(t.TempDir(), &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	old := bytes.Repeat([]byte{1}, 95)
	const n = 4000 // 400 segments of 10 records
	for base := uint64(0); base < n; base += 500 {
		var b Batch
		for off := base; off < base+500; off++ {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: old})
		}
		require.NoError(t, s.Write(&b))
	}
	require.Equal(t, n/10, segmentKeys(t, s, q))

	var b Batch
	for off := uint64(0); off < n; off += 10 {
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: []byte{2}})
	}
	require.True(t, s.Limits().Allows(&b), "within Limits")
	err = s.Write(&b)
	require.ErrorIs(t, err, ErrBatchTooLarge)
	require.ErrorContains(t, err, "rewriting the segments holding them")
	recs, err := s.Read(q, 0, n, 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, n)
	for _, r := range recs {
		require.Equal(t, old, r.Value, "offset %d: nothing of the refused batch is stored", r.Offset)
	}

	for i := 0; i < len(b.Entries); i += 50 {
		require.NoError(t, s.Write(&Batch{Entries: b.Entries[i : i+50]}))
	}
	recs, err = s.Read(q, 0, n, 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, n)
	for _, r := range recs {
		if r.Offset%10 == 0 {
			require.Equal(t, []byte{2}, r.Value)
		} else {
			require.Equal(t, old, r.Value)
		}
	}
}
