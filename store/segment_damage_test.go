package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

// segmentDamages are the ways a segment value can be damaged behind the
// store's back: a flipped checksum byte, a count flipped upwards (still
// readable, but wrong), and a value Badger lost from its value log (it reads
// back empty, so not even its count can be read).
var segmentDamages = map[string]func(v []byte) []byte{
	"checksum": func(v []byte) []byte { v[len(v)-1] ^= 0xff; return v },
	"count":    func(v []byte) []byte { v[1] |= 0x20; return v },
	"lost":     func([]byte) []byte { return nil },
}

// damageSegmentWith replaces the value of the segment of q starting at
// start with damage of it.
func damageSegmentWith(t *testing.T, s *Badger, q QueueID, start uint64, damage func([]byte) []byte) {
	t.Helper()
	require.NoError(t, s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(recordKey(q, start))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		return txn.Set(recordKey(q, start), damage(v))
	}))
}

// damagedQueue writes one segment [0, 6) and, unless last, a segment
// [6, 7) holding "after", then damages the first.
func damagedQueue(t *testing.T, damage func([]byte) []byte, last bool) (*Badger, QueueID) {
	t.Helper()
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	q := QueueID{Topic: 1}
	var b Batch
	for off := range uint64(6) {
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: []byte(fmt.Sprint("record ", off))})
	}
	require.NoError(t, s.Write(&b))
	if !last {
		require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 6, Value: []byte("after")}}}))
	}
	require.Equal(t, 1+map[bool]int{false: 1, true: 0}[last], segmentKeys(t, s, q))
	damageSegmentWith(t, s, q, 0, damage)
	return s, q
}

func requireRecords(t *testing.T, s *Badger, q QueueID, want []Record) {
	t.Helper()
	got, err := s.Read(q, 0, 100, 0, 0)
	require.NoError(t, err)
	require.Equal(t, want, got)
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	if len(want) == 0 {
		require.False(t, ok)
		return
	}
	require.Equal(t, []any{want[0].Offset, want[len(want)-1].Offset + 1, true}, []any{first, next, ok}, "bounds")
}

// TestSegmentsDamaged_DeletePassesOver: a deletion that meets a damaged
// segment no longer fails (and fails again at every retention pass): the
// offsets of the segment it covers go, and those it does not cover stay, as
// the records with no value they read as.
func TestSegmentsDamaged_DeletePassesOver(t *testing.T) {
	for name, damage := range segmentDamages {
		t.Run(name, func(t *testing.T) {
			s, q := damagedQueue(t, damage, false)
			requireRecords(t, s, q, []Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}, {Offset: 4}, {Offset: 5}, {Offset: 6, Value: []byte("after")}})

			// The head of it, as retention deletes.
			require.NoError(t, s.DeleteRange(q, 0, 2))
			requireRecords(t, s, q, []Record{{Offset: 2}, {Offset: 3}, {Offset: 4}, {Offset: 5}, {Offset: 6, Value: []byte("after")}})
			// The middle of it.
			require.NoError(t, s.DeleteRange(q, 3, 5))
			requireRecords(t, s, q, []Record{{Offset: 2}, {Offset: 5}, {Offset: 6, Value: []byte("after")}})
			require.NoError(t, s.DeleteRange(q, 0, 6))
			requireRecords(t, s, q, []Record{{Offset: 6, Value: []byte("after")}})
		})
		t.Run(name+"/covered", func(t *testing.T) {
			// A range that covers the damaged segment deletes it, whatever
			// its count says.
			s, q := damagedQueue(t, damage, false)
			require.NoError(t, s.DeleteRange(q, 0, 6))
			requireRecords(t, s, q, []Record{{Offset: 6, Value: []byte("after")}})
		})
		t.Run(name+"/reaching in", func(t *testing.T) {
			// A range starting inside the damaged segment and ending past it.
			s, q := damagedQueue(t, damage, false)
			require.NoError(t, s.DeleteRange(q, 4, 7))
			requireRecords(t, s, q, []Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}})
		})
	}
}

// TestSegmentsDamaged_WriteInto: a write into the offsets of a damaged
// segment stores what it writes; the segment's other offsets keep reading
// as records with no value, as they did before it.
func TestSegmentsDamaged_WriteInto(t *testing.T) {
	for name, damage := range segmentDamages {
		t.Run(name, func(t *testing.T) {
			s, q := damagedQueue(t, damage, false)
			require.NoError(t, s.Write(&Batch{Entries: []Entry{
				{Queue: q, Offset: 2, Value: []byte("new 2")},
				{Queue: q, Offset: 4, Value: []byte("new 4")},
				{Queue: q, Offset: 6, Value: []byte("new 6")},
			}}))
			requireRecords(t, s, q, []Record{{Offset: 0}, {Offset: 1}, {Offset: 2, Value: []byte("new 2")}, {Offset: 3},
				{Offset: 4, Value: []byte("new 4")}, {Offset: 5}, {Offset: 6, Value: []byte("new 6")}})
		})
	}
}

// TestSegmentsDamaged_LastSegment: a damaged last segment reads as the
// offsets Bounds gives it (its count, when that can be read; one record
// otherwise), not as one record short of them, which left a reader at
// the second offset with nothing below the queue's end.
func TestSegmentsDamaged_LastSegment(t *testing.T) {
	for name, damage := range segmentDamages {
		t.Run(name, func(t *testing.T) {
			s, q := damagedQueue(t, damage, true)
			first, next, ok, err := s.Bounds(q)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, uint64(0), first)
			var want []Record
			for off := first; off < next; off++ {
				want = append(want, Record{Offset: off})
			}
			requireRecords(t, s, q, want)
			recs, err := s.Read(q, next-1, next, 0, 0)
			require.NoError(t, err)
			require.Equal(t, []Record{{Offset: next - 1}}, recs)

			// An append after it, and a write into it.
			require.NoError(t, s.Write(&Batch{Entries: []Entry{
				{Queue: q, Offset: 0, Value: []byte("new 0")},
				{Queue: q, Offset: next, Value: []byte("appended")},
			}}))
			want[0].Value = []byte("new 0")
			want = append(want, Record{Offset: next, Value: []byte("appended")})
			requireRecords(t, s, q, want)
		})
	}
}

// TestSegmentsDamaged_GapAfterIsNotTakenForRecords: a damaged segment whose
// count cannot be read, followed by a gap (as a delay log leaves), stands
// for no more offsets than its value has bytes: a deletion inside it keeps
// a bounded number of them, not one per offset of the gap.
func TestSegmentsDamaged_GapAfterIsNotTakenForRecords(t *testing.T) {
	for name, damage := range map[string]func(v []byte) []byte{
		"version": func(v []byte) []byte { v[0] ^= 0xff; return v },
		"lost":    segmentDamages["lost"],
	} {
		t.Run(name, func(t *testing.T) {
			s, q := damagedQueue(t, func(v []byte) []byte { return v }, true)
			const far = uint64(1) << 23
			require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: far, Value: []byte("far")}}}))
			damageSegmentWith(t, s, q, 0, damage)

			require.NoError(t, s.DeleteRange(q, 2, 4))
			recs, err := s.Read(q, 0, 1<<30, 0, 0)
			require.NoError(t, err)
			require.NotEmpty(t, recs)
			kept := 0
			for _, r := range recs {
				if r.Offset < far {
					kept++
				}
			}
			require.LessOrEqual(t, kept, maxSegmentBytes, "offsets kept of the damaged segment")
			first, next, ok, err := s.Bounds(q)
			require.NoError(t, err)
			require.Equal(t, []any{uint64(0), far + 1, true}, []any{first, next, ok})
		})
	}
}

// FuzzBadgerDamagedSegment stores any value in place of a sound segment
// [0, 6) of a queue, followed by a segment [6, 7), as damage behind the
// store's back would leave it, and requires the store to go on: Read gives
// the records a sound value holds, or records with no value for a damaged
// one's offsets (damagedEnd), in order and before the next segment's;
// Bounds agrees; another queue reads back untouched; VerifyRecords finds
// the damage; and a deletion, a write into it and a drop of the queue
// succeed. Each input costs a few Badger transactions and Badger's own
// goroutines make coverage vary from run to run: fuzz it with a short
// -fuzzminimizetime (such as 5x).
func FuzzBadgerDamagedSegment(f *testing.F) {
	var recs [][]byte
	for off := range 6 {
		recs = append(recs, []byte(fmt.Sprint("record ", off)))
	}
	sound := encodeSegment(nil, recs)
	f.Add(sound)
	for _, damage := range segmentDamages {
		f.Add(damage(bytes.Clone(sound)))
	}
	f.Add(sound[:len(sound)/2])
	f.Add(encodeSegment(nil, recs[:2]))
	s, err := OpenBadger(f.TempDir(), nil)
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, s.Close()) })
	var n uint32
	f.Fuzz(func(t *testing.T, v []byte) {
		n++
		q, other := QueueID{Topic: 1, Queue: n}, QueueID{Topic: 2, Queue: n}
		var b Batch
		for _, qq := range []QueueID{q, other} {
			for off, rec := range recs {
				b.Entries = append(b.Entries, Entry{Queue: qq, Offset: uint64(off), Value: rec})
			}
		}
		require.NoError(t, s.Write(&b))
		require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 6, Value: []byte("after")}}}))
		damageSegmentWith(t, s, q, 0, func([]byte) []byte { return v })

		var want []Record
		if err := decodeSegment(v, func(i int, rec []byte) bool {
			if len(rec) == 0 {
				rec = nil
			}
			want = append(want, Record{Offset: uint64(i), Value: rec})
			return true
		}); err != nil {
			for off := range damagedEnd(0, v, 6) {
				want = append(want, Record{Offset: off})
			}
			require.ErrorIs(t, s.VerifyRecords(), ErrDamaged)
		} else {
			require.NoError(t, s.VerifyRecords())
		}
		if len(want) > 6 {
			// A sound segment of another count than it was written with
			// overlaps the next: forged, not damaged.
			require.NoError(t, s.DropQueue(q))
			require.NoError(t, s.DropQueue(other))
			return
		}
		want = append(want, Record{Offset: 6, Value: []byte("after")})
		requireRecords(t, s, q, want)
		got, err := s.Read(other, 0, 100, 0, 0)
		require.NoError(t, err)
		require.Len(t, got, len(recs), "the other queue")
		for i, r := range got {
			require.Equal(t, Record{Offset: uint64(i), Value: recs[i]}, r, "the other queue")
		}

		require.NoError(t, s.DeleteRange(q, 2, 4))
		require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 3, Value: []byte("new 3")}}}))
		got, err = s.Read(q, 0, 100, 0, 0)
		require.NoError(t, err)
		for i := 1; i < len(got); i++ {
			require.Less(t, got[i-1].Offset, got[i].Offset, "offsets in order: %v", got)
		}
		require.NoError(t, s.DropQueue(q))
		require.NoError(t, s.DropQueue(other))
		_, _, ok, err := s.Bounds(q)
		require.NoError(t, err)
		require.False(t, ok, "dropped")
	})
}
