package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// segmentKeys counts the Badger keys holding records of q.
func segmentKeys(t testing.TB, s *Badger, q QueueID) int {
	t.Helper()
	n := 0
	require.NoError(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: queuePrefix(q)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	}))
	return n
}

func TestSegmentsPackAppends(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	// 64 records of 177 bytes, interleaved over 4 queues as a group commit
	// of 64 senders writes them.
	var b Batch
	var next [4]uint64
	for i := range 64 {
		q := QueueID{Topic: 1, Queue: uint32(i % 4)}
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: next[i%4], Value: bytes.Repeat([]byte{byte(i)}, 177)})
		next[i%4]++
	}
	require.NoError(t, s.Write(&b))
	for qi := range 4 {
		q := QueueID{Topic: 1, Queue: uint32(qi)}
		// 16 records of 177 bytes in segments below the 1 KiB threshold: 5
		// fit in one (5 × 179 + 7 < 1023), so 4 keys.
		require.Equal(t, 4, segmentKeys(t, s, q), "queue %d", qi)
		recs, err := s.Read(q, 0, 100, 0, 0)
		require.NoError(t, err)
		require.Len(t, recs, 16)
		for i, r := range recs {
			require.Equal(t, uint64(i), r.Offset)
			require.Equal(t, bytes.Repeat([]byte{byte(i*4 + qi)}, 177), r.Value)
		}
	}

	// A record at or above the threshold gets a segment of its own.
	q := QueueID{Topic: 2}
	big := bytes.Repeat([]byte("x"), 4096)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 0, Value: big}, {Queue: q, Offset: 1, Value: big}}}))
	require.Equal(t, 2, segmentKeys(t, s, q))
}

func TestSegmentsDamaged(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	var b Batch
	for off := range uint64(6) {
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: off, Value: []byte(fmt.Sprint("record ", off))})
	}
	require.NoError(t, s.Write(&b)) // one segment [0, 6)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 6, Value: []byte("after")}}}))

	// Damage the first segment behind the store's back.
	require.NoError(t, s.db.Update(func(txn *badger.Txn) error {
		item, err := txn.Get(recordKey(q, 0))
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		v[5] ^= 0xff
		return txn.Set(recordKey(q, 0), v)
	}))

	// Each offset it held reads as a record with no value (the engine
	// reports those as corrupt); the next segment reads normally.
	recs, err := s.Read(q, 0, 100, 0, 0)
	require.NoError(t, err)
	require.Len(t, recs, 7)
	for i, r := range recs[:6] {
		require.Equal(t, uint64(i), r.Offset)
		require.Nil(t, r.Value)
	}
	require.Equal(t, "after", string(recs[6].Value))
	recs, err = s.Read(q, 3, 100, 2, 0)
	require.NoError(t, err)
	require.Equal(t, []Record{{Offset: 3}, {Offset: 4}}, recs)
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, []any{uint64(0), uint64(7), true}, []any{first, next, ok})

	// Writing into a damaged segment stores what it writes; its other
	// records are lost already and keep reading as records with no value
	// (segment_damage_test.go has more).
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: 2, Value: []byte("new")}}}))
	recs, err = s.Read(q, 1, 4, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []Record{{Offset: 1}, {Offset: 2, Value: []byte("new")}, {Offset: 3}}, recs)

	// Deleting part of one keeps the rest so too; deleting all of it
	// deletes it, and so does dropping the queue.
	damageSegment(t, s, q, 0)
	require.NoError(t, s.DeleteRange(q, 0, 3))
	recs, err = s.Read(q, 0, 100, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []Record{{Offset: 3}, {Offset: 4}, {Offset: 5}, {Offset: 6, Value: []byte("after")}}, recs)
	damageSegment(t, s, q, 3)
	require.NoError(t, s.DeleteRange(q, 0, 6))
	first, next, ok, err = s.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, []any{uint64(6), uint64(7), true}, []any{first, next, ok})
	damageSegment(t, s, q, 6)
	require.NoError(t, s.DropQueue(q))
	_, _, ok, err = s.Bounds(q)
	require.NoError(t, err)
	require.False(t, ok)
}

// damageSegment flips a byte of the segment of q starting at start, behind
// the store's back.
func damageSegment(t *testing.T, s *Badger, q QueueID, start uint64) {
	t.Helper()
	damageSegmentWith(t, s, q, start, segmentDamages["checksum"])
}

func FuzzDecodeSegment(f *testing.F) {
	f.Add(encodeSegment(nil, [][]byte{[]byte("a"), []byte("bc")}))
	f.Add(encodeSegment(nil, [][]byte{nil}))
	f.Add([]byte{segmentVersion, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3, 4})
	f.Fuzz(func(t *testing.T, v []byte) {
		var got [][]byte
		err := decodeSegment(v, func(_ int, rec []byte) bool {
			got = append(got, rec)
			return true
		})
		if err != nil {
			require.ErrorIs(t, err, errSegment)
			require.Empty(t, got, "records handed out from a damaged segment")
			return
		}
		// What decodes re-encodes to the same bytes.
		require.Equal(t, v, encodeSegment(nil, got))
	})
}

// TestSegmentsModel runs random writes (appends, overwrites, sparse and
// out-of-order offsets, several queues per batch), range deletions, queue
// drops and reopens against the Badger store and the memory store, and
// requires the same records and bounds from both after every step.
func TestSegmentsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir := t.TempDir()
		o := DefaultBadgerOptions()
		// Small memtables: each of the many stores opened is cheaper, and
		// the writes rotate them more often.
		o.MemTableSize = 1 << 20
		o.ValueThreshold = int64(rapid.SampledFrom([]int{64, 256, 1024}).Draw(rt, "threshold"))
		// Zero keeps segments inline; the others are above some thresholds
		// (segments in the value log) and below others.
		o.SegmentBytes = int64(rapid.SampledFrom([]int{0, 64, 300, 4096}).Draw(rt, "segmentBytes"))
		s, err := OpenBadger(dir, &o)
		require.NoError(rt, err)
		// Deletions of a few segments per transaction, so ranges and
		// drops cross chunk boundaries.
		chunk := rapid.IntRange(1, 3).Draw(rt, "chunkSegments")
		s.chunkSegments = chunk
		defer func() { require.NoError(rt, s.Close()) }()
		m := NewMemory()
		queues := []QueueID{{Topic: 1, Queue: 0}, {Topic: 1, Queue: 1}, {Topic: 2, Queue: 0}}
		value := rapid.SliceOfN(rapid.Byte(), 0, 90)

		check := func(step int) {
			for _, q := range queues {
				want, err := m.Read(q, 0, 1<<62, 0, 0)
				require.NoError(rt, err)
				got, err := s.Read(q, 0, 1<<62, 0, 0)
				require.NoError(rt, err)
				require.Equal(rt, want, got, "step %d, queue %v", step, q)
				wf, wn, wok, _ := m.Bounds(q)
				gf, gn, gok, err := s.Bounds(q)
				require.NoError(rt, err)
				require.Equal(rt, []any{wf, wn, wok}, []any{gf, gn, gok}, "bounds, step %d, queue %v", step, q)
				// A bounded read from a random place agrees too.
				from := rapid.Uint64Range(0, 70).Draw(rt, "from")
				to := from + rapid.Uint64Range(0, 40).Draw(rt, "len")
				max := rapid.IntRange(0, 8).Draw(rt, "max")
				maxBytes := rapid.IntRange(0, 300).Draw(rt, "maxBytes")
				want, err = m.Read(q, from, to, max, maxBytes)
				require.NoError(rt, err)
				got, err = s.Read(q, from, to, max, maxBytes)
				require.NoError(rt, err)
				require.Equal(rt, want, got, "read [%d, %d) max %d/%d, step %d", from, to, max, maxBytes, step)
			}
		}
		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for step := range steps {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0, 1, 2, 3, 4, 5: // a batch of runs, over one or more queues
				var b Batch
				for range rapid.IntRange(1, 4).Draw(rt, "runs") {
					q := rapid.SampledFrom(queues).Draw(rt, "queue")
					start := rapid.Uint64Range(0, 60).Draw(rt, "start")
					for i := range uint64(rapid.IntRange(1, 12).Draw(rt, "n")) {
						b.Entries = append(b.Entries, Entry{Queue: q, Offset: start + i, Value: value.Draw(rt, "value")})
					}
				}
				require.NoError(rt, m.Write(&b))
				require.NoError(rt, s.Write(&b))
			case 6, 7:
				q := rapid.SampledFrom(queues).Draw(rt, "queue")
				from := rapid.Uint64Range(0, 70).Draw(rt, "from")
				to := from + rapid.Uint64Range(0, 30).Draw(rt, "len")
				require.NoError(rt, m.DeleteRange(q, from, to))
				require.NoError(rt, s.DeleteRange(q, from, to))
			case 8:
				q := rapid.SampledFrom(queues).Draw(rt, "queue")
				require.NoError(rt, m.DropQueue(q))
				require.NoError(rt, s.DropQueue(q))
			case 9:
				require.NoError(rt, s.Close())
				s, err = OpenBadger(dir, &o)
				require.NoError(rt, err)
				s.chunkSegments = chunk
			}
			check(step)
		}
	})
}

// TestSegmentUnknownVersionRefused: a segment whose version byte this build
// does not know is refused with an error naming the version, not decoded,
// and Read reports its offsets as records with no value.
func TestSegmentUnknownVersionRefused(t *testing.T) {
	v := encodeSegment(nil, [][]byte{[]byte("a"), []byte("b")})
	v[0] = 7
	_, err := segmentCount(v)
	require.ErrorIs(t, err, errSegment)
	require.ErrorContains(t, err, "segment version 7")
	called := false
	err = decodeSegment(v, func(int, []byte) bool { called = true; return true })
	require.ErrorContains(t, err, "segment version 7")
	require.False(t, called)

	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	q := QueueID{Topic: 1}
	require.NoError(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set(recordKey(q, 0), v) }))
	recs, err := s.Read(q, 0, 10, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []Record{{Offset: 0}}, recs, "an unreadable segment yields its offset with no value")
}
