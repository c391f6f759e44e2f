package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// storeAPI repeats the Store interface the engine (root package) declares,
// so the compiler checks that both implementations keep its method set.
type storeAPI interface {
	Write(b *store.Batch) error
	Sync() error
	Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error)
	Bounds(q store.QueueID) (first, next uint64, ok bool, err error)
	DeleteRange(q store.QueueID, from, to uint64) error
	DropQueue(q store.QueueID) error
	GetMeta(key []byte) ([]byte, error)
	ScanMeta(prefix []byte, fn func(key, value []byte) error) error
	Size() (int64, error)
	Limits() store.Limits
	Reclaim() error
	Close() error
}

var (
	_ storeAPI = (*store.Memory)(nil)
	_ storeAPI = (*store.Badger)(nil)
)

// harness describes one implementation to the conformance suite.
type harness struct {
	// durable says the data outlives Close: opening the same location
	// again gives the same data.
	durable bool
	// sizeTracksWrites says Size grows as records are written (and
	// synced).
	sizeTracksWrites bool
	// location prepares a fresh, empty place for a store and returns a
	// function that opens a store there. A durable harness's opener may be
	// called again once the previous store is closed.
	location func(t *testing.T) func() (storeAPI, error)
}

func TestConformanceMemory(t *testing.T) {
	runConformance(t, harness{
		sizeTracksWrites: true,
		location: func(t *testing.T) func() (storeAPI, error) {
			return func() (storeAPI, error) { return store.NewMemory(), nil }
		},
	})
}

func TestConformanceBadger(t *testing.T) {
	runConformance(t, harness{
		durable:          true,
		sizeTracksWrites: true,
		location: func(t *testing.T) func() (storeAPI, error) {
			dir := t.TempDir()
			return func() (storeAPI, error) { return store.OpenBadger(dir, nil) }
		},
	})
}

// The store with segments large enough to live in Badger's value log, as
// the nodes of package cluster use it.
func TestConformanceBadgerLargeSegments(t *testing.T) {
	runConformance(t, harness{
		durable:          true,
		sizeTracksWrites: true,
		location: func(t *testing.T) func() (storeAPI, error) {
			dir := t.TempDir()
			o := store.DefaultBadgerOptions()
			o.SegmentBytes = 16 << 10
			return func() (storeAPI, error) { return store.OpenBadger(dir, &o) }
		},
	})
}

func TestConformanceBadgerInMemory(t *testing.T) {
	runConformance(t, harness{
		location: func(t *testing.T) func() (storeAPI, error) {
			return func() (storeAPI, error) {
				o := store.DefaultBadgerOptions()
				o.InMemory = true
				return store.OpenBadger("", &o)
			}
		},
	})
}

// subject is one store under test, reopenable when the harness is durable.
type subject struct {
	t    *testing.T
	h    harness
	s    storeAPI
	open func() (storeAPI, error)
}

func start(t *testing.T, h harness) *subject {
	t.Helper()
	x := &subject{t: t, h: h, open: h.location(t)}
	s, err := x.open()
	require.NoError(t, err)
	x.s = s
	t.Cleanup(func() { assert.NoError(t, x.s.Close()) })
	return x
}

// reopen closes the store and opens the same location again.
func (x *subject) reopen() {
	x.t.Helper()
	require.True(x.t, x.h.durable, "reopen on a store that is not durable")
	require.NoError(x.t, x.s.Close())
	s, err := x.open()
	require.NoError(x.t, err)
	x.s = s
}

// val is the deterministic value of record off of q, n bytes long.
func val(q store.QueueID, off uint64, n int) []byte {
	if n == 0 {
		return nil
	}
	seed := fmt.Sprintf("%d/%d@%d;", q.Topic, q.Queue, off)
	return bytes.Repeat([]byte(seed), n/len(seed)+1)[:n]
}

func write(t *testing.T, s storeAPI, entries ...store.Entry) {
	t.Helper()
	require.NoError(t, s.Write(&store.Batch{Entries: entries}))
}

func putMeta(t *testing.T, s storeAPI, kv ...string) {
	t.Helper()
	var b store.Batch
	for i := 0; i < len(kv); i += 2 {
		b.Meta = append(b.Meta, store.MetaOp{Key: []byte(kv[i]), Value: []byte(kv[i+1])})
	}
	require.NoError(t, s.Write(&b))
}

// fill writes records [from, to) of q with values of n bytes, in batches
// within the store's limits.
func fill(t *testing.T, s storeAPI, q store.QueueID, from, to uint64, n int) {
	t.Helper()
	per := 500
	if l := s.Limits(); l.MaxEntries > 0 && l.MaxEntries < per {
		per = l.MaxEntries
	}
	if l := s.Limits(); l.MaxBytes > 0 && n > 0 && l.MaxBytes/n < per {
		per = max(l.MaxBytes/n, 1)
	}
	var b store.Batch
	for off := from; off < to; off++ {
		b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: val(q, off, n)})
		if len(b.Entries) == per || off+1 == to {
			require.NoError(t, s.Write(&b))
			b.Entries = b.Entries[:0]
		}
	}
}

func readAll(t *testing.T, s storeAPI, q store.QueueID) []store.Record {
	t.Helper()
	recs, err := s.Read(q, 0, math.MaxUint64, 0, 0)
	require.NoError(t, err)
	return recs
}

func offsets(recs []store.Record) []uint64 {
	out := []uint64{}
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

func span(from, to uint64) []uint64 {
	out := []uint64{}
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

type bounds struct {
	First, Next uint64
	OK          bool
}

func getBounds(t *testing.T, s storeAPI, q store.QueueID) bounds {
	t.Helper()
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	return bounds{first, next, ok}
}

func allMeta(t *testing.T, s storeAPI, prefix string) [][2]string {
	t.Helper()
	out := [][2]string{}
	require.NoError(t, s.ScanMeta([]byte(prefix), func(k, v []byte) error {
		out = append(out, [2]string{string(k), string(v)})
		return nil
	}))
	return out
}

// requireValues checks that recs carry exactly the values val gives for n.
func requireValues(t *testing.T, q store.QueueID, n int, recs []store.Record) {
	t.Helper()
	for _, r := range recs {
		require.True(t, bytes.Equal(val(q, r.Offset, n), r.Value), "value of %v@%d", q, r.Offset)
	}
}

func runConformance(t *testing.T, h harness) {
	q := store.QueueID{Topic: 1, Queue: 2}

	t.Run("AppendAndReadBack", func(t *testing.T) {
		s := start(t, h).s
		rng := rand.New(rand.NewPCG(1, 2))
		want := map[uint64][]byte{}
		var b store.Batch
		for off := uint64(0); off < 300; off++ {
			// Empty, small, and above Badger's value threshold.
			n := []int{0, 1, 100, 1000, 5000}[rng.IntN(5)]
			v := make([]byte, n)
			for i := range v {
				v[i] = byte(rng.Uint32())
			}
			want[off] = v
			b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: v})
			if len(b.Entries) == 50 {
				require.NoError(t, s.Write(&b))
				b.Entries = nil
			}
		}
		recs := readAll(t, s, q)
		require.Equal(t, span(0, 300), offsets(recs))
		for _, r := range recs {
			require.True(t, bytes.Equal(want[r.Offset], r.Value), "offset %d", r.Offset)
		}
		require.Equal(t, bounds{0, 300, true}, getBounds(t, s, q))
		require.NoError(t, s.Sync())
	})

	t.Run("ReadEdges", func(t *testing.T) {
		s := start(t, h).s
		fill(t, s, q, 10, 20, 100) // offsets 10..19, 100 bytes each
		read := func(from, to uint64, max, maxBytes int) []uint64 {
			t.Helper()
			recs, err := s.Read(q, from, to, max, maxBytes)
			require.NoError(t, err)
			requireValues(t, q, 100, recs)
			return offsets(recs)
		}
		assert.Equal(t, span(10, 20), read(0, math.MaxUint64, 0, 0), "no limits")
		assert.Equal(t, span(10, 20), read(0, math.MaxUint64, -1, -5), "negative means no limit")
		assert.Equal(t, span(10, 20), read(0, 1000, 100, 1<<20), "limits not reached")
		assert.Equal(t, span(10, 13), read(0, 1000, 3, 0), "from below first")
		assert.Empty(t, read(20, 1000, 0, 0), "from at end")
		assert.Empty(t, read(500, 1000, 0, 0), "from beyond end")
		assert.Empty(t, read(15, 12, 0, 0), "to < from")
		assert.Empty(t, read(15, 15, 0, 0), "to == from")
		assert.Empty(t, read(0, 10, 0, 0), "to at first")
		assert.Equal(t, []uint64{10}, read(0, 11, 0, 0), "to just past first")
		assert.Equal(t, span(12, 17), read(12, 17, 0, 0), "middle")
		assert.Equal(t, span(15, 20), read(15, math.MaxUint64, 0, 0), "to beyond end")
		assert.Equal(t, []uint64{14}, read(14, 20, 1, 0), "max 1")
		assert.Equal(t, []uint64{14}, read(14, 20, 0, 1), "maxBytes below one record")
		assert.Equal(t, []uint64{14}, read(14, 20, 0, 100), "maxBytes reached exactly")
		assert.Equal(t, span(14, 16), read(14, 20, 0, 101), "maxBytes one past a record")
		assert.Equal(t, span(14, 17), read(14, 20, 0, 250), "maxBytes inside the third")
		assert.Equal(t, span(14, 16), read(14, 20, 2, 250), "max before maxBytes")

		other, err := s.Read(store.QueueID{Topic: 9, Queue: 9}, 0, math.MaxUint64, 0, 0)
		require.NoError(t, err)
		assert.Empty(t, other, "unknown queue")
	})

	t.Run("QueuesAndTopicsIsolated", func(t *testing.T) {
		s := start(t, h).s
		// Neighbours in every byte of the key: consecutive queues, a queue
		// whose low byte is 0xFF next to the one carrying into the next
		// byte, the last queue of a topic next to the first of the next
		// topic, and the extremes.
		qs := []store.QueueID{
			{Topic: 0, Queue: 0}, {Topic: 0, Queue: 1}, {Topic: 0, Queue: 0xFF}, {Topic: 0, Queue: 0x100},
			{Topic: 0, Queue: 0xFFFFFFFF}, {Topic: 1, Queue: 0}, {Topic: 0xFF, Queue: 0},
			{Topic: 1, Queue: 0xFFFFFFFF}, {Topic: 2, Queue: 0},
			{Topic: 0xFFFFFFFF, Queue: 0xFFFFFFFF},
		}
		// Each queue holds its lowest and highest possible offsets, so
		// every queue's keys touch its neighbours' keys.
		offs := []uint64{0, 1, 2, math.MaxUint64 - 1}
		var b store.Batch
		for _, q := range qs {
			for _, off := range offs {
				b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: val(q, off, 20)})
			}
		}
		require.NoError(t, s.Write(&b))
		check := func(q store.QueueID, want []uint64) {
			t.Helper()
			recs := readAll(t, s, q)
			requireValues(t, q, 20, recs)
			if len(want) == 0 {
				require.Empty(t, recs, "queue %v", q)
				require.Equal(t, bounds{}, getBounds(t, s, q), "queue %v", q)
			} else {
				require.Equal(t, want, offsets(recs), "queue %v", q)
				require.Equal(t, bounds{want[0], want[len(want)-1] + 1, true}, getBounds(t, s, q), "queue %v", q)
			}
		}
		for _, q := range qs {
			check(q, offs)
		}
		for _, q := range []store.QueueID{{Topic: 0, Queue: 2}, {Topic: 0, Queue: 0xFE}, {Topic: 0xFFFFFFFF, Queue: 0xFFFFFFFE}, {Topic: 3, Queue: 3}} {
			check(q, nil)
		}

		require.NoError(t, s.DeleteRange(qs[0], 0, math.MaxUint64))
		require.NoError(t, s.DropQueue(qs[2]))
		require.NoError(t, s.DeleteRange(qs[4], 1, math.MaxUint64))
		require.NoError(t, s.DeleteRange(qs[7], 0, 2))
		for i, q := range qs {
			switch i {
			case 0, 2:
				check(q, nil)
			case 4:
				check(q, []uint64{0})
			case 7:
				check(q, []uint64{2, math.MaxUint64 - 1})
			default:
				check(q, offs)
			}
		}
	})

	t.Run("AtomicWrite", func(t *testing.T) {
		s := start(t, h).s
		putMeta(t, s, "k/gone", "x", "k/old", "1")
		b := &store.Batch{
			Entries: []store.Entry{
				{Queue: q, Offset: 0, Value: val(q, 0, 10)},
				{Queue: q, Offset: 1, Value: val(q, 1, 10)},
				{Queue: store.QueueID{Topic: 7}, Offset: 5, Value: []byte("other")},
			},
			Meta: []store.MetaOp{
				{Key: []byte("k/old"), Value: []byte("2")},
				{Key: []byte("k/new"), Value: []byte("3")},
				{Key: []byte("k/gone"), Delete: true},
				{Key: []byte("k/never"), Delete: true},
			},
		}
		require.NoError(t, s.Write(b))
		require.Equal(t, []uint64{0, 1}, offsets(readAll(t, s, q)))
		require.Equal(t, []uint64{5}, offsets(readAll(t, s, store.QueueID{Topic: 7})))
		require.Equal(t, [][2]string{{"k/new", "3"}, {"k/old", "2"}}, allMeta(t, s, "k/"))

		// The empty batch and a nil batch are no-ops.
		require.NoError(t, s.Write(&store.Batch{}))
		require.NoError(t, s.Write(nil))

		// An offset of MaxUint64 is refused and nothing is written.
		err := s.Write(&store.Batch{
			Entries: []store.Entry{{Queue: q, Offset: 2}, {Queue: q, Offset: math.MaxUint64}},
			Meta:    []store.MetaOp{{Key: []byte("k/bad"), Value: []byte("1")}},
		})
		require.Error(t, err)
		require.Equal(t, bounds{0, 2, true}, getBounds(t, s, q))
		_, err = s.GetMeta([]byte("k/bad"))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("KeyTooLong", func(t *testing.T) {
		// Write takes a metadata key up to BadgerMaxKeyBytes and refuses a
		// longer one whole, with ErrBatchTooLarge, in every store (Badger
		// itself would fail it after taking the rest of the batch's cost).
		s := start(t, h).s
		q := store.QueueID{Topic: 1}
		key := func(n int) []byte { return bytes.Repeat([]byte{'k'}, n) }
		ok := &store.Batch{Meta: []store.MetaOp{{Key: key(store.MaxKeyBytes), Value: []byte("v")}}}
		require.True(t, store.KeysFit(ok))
		require.NoError(t, s.Write(ok))
		above := &store.Batch{Meta: []store.MetaOp{{Key: key(store.BadgerMaxKeyBytes), Value: []byte("v")}}}
		require.False(t, store.KeysFit(above), "a leader proposes nothing above MaxKeyBytes")
		require.NoError(t, s.Write(above), "Write takes what Badger takes")
		long := &store.Batch{
			Entries: []store.Entry{{Queue: q, Offset: 0, Value: []byte("x")}},
			Meta:    []store.MetaOp{{Key: []byte("short"), Value: []byte("v")}, {Key: key(store.BadgerMaxKeyBytes + 1), Value: []byte("v")}},
		}
		require.False(t, store.KeysFitBadger(long))
		require.ErrorIs(t, s.Write(long), store.ErrBatchTooLarge)
		require.Equal(t, bounds{}, getBounds(t, s, q), "nothing of it is stored")
		_, err := s.GetMeta([]byte("short"))
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("Limits", func(t *testing.T) {
		s := start(t, h).s
		l := s.Limits()
		if l.MaxEntries == 0 && l.MaxBytes == 0 {
			t.Skip("store has no limits")
		}
		require.Positive(t, l.MaxEntries)
		require.Positive(t, l.MaxBytes)
		qa, qb := store.QueueID{Topic: 1}, store.QueueID{Topic: 2}

		// A batch at exactly both limits commits: MaxEntries-1 entries and
		// one metadata op sharing MaxBytes.
		metaKey, metaVal := []byte("lim/at"), []byte("v")
		entryBytes := l.MaxBytes - len(metaKey) - len(metaVal)
		n := l.MaxEntries - 1
		at := &store.Batch{Meta: []store.MetaOp{{Key: metaKey, Value: metaVal}}}
		for i := range n {
			size := entryBytes / n
			if i < entryBytes%n {
				size++ // spread the remainder so every value stays inline
			}
			at.Entries = append(at.Entries, store.Entry{Queue: qa, Offset: uint64(i), Value: val(qa, uint64(i), size)})
		}
		ops, nbytes := l.Cost(at)
		require.Equal(t, l.MaxEntries, ops)
		require.Equal(t, l.MaxBytes, nbytes)
		require.True(t, l.Allows(at))
		require.NoError(t, s.Write(at))
		require.Equal(t, bounds{0, uint64(n), true}, getBounds(t, s, qa))

		// One value of the largest size allowed commits.
		big := l.MaxBytes
		if l.MaxValueSize > 0 {
			big = min(big, l.MaxValueSize)
		}
		require.NoError(t, s.Write(&store.Batch{Entries: []store.Entry{{Queue: qb, Offset: 0, Value: val(qb, 0, big)}}}))
		recs := readAll(t, s, qb)
		require.Len(t, recs, 1)
		requireValues(t, qb, big, recs)
		require.NoError(t, s.DropQueue(qb))

		// Over either limit: ErrBatchTooLarge and nothing written.
		tooMany := &store.Batch{Meta: []store.MetaOp{{Key: []byte("lim/over"), Value: []byte("1")}}}
		for i := range l.MaxEntries {
			tooMany.Entries = append(tooMany.Entries, store.Entry{Queue: qb, Offset: uint64(i), Value: []byte{1}})
		}
		// Too many inline bytes: values just under the out-of-line threshold.
		tooBig := &store.Batch{Meta: []store.MetaOp{{Key: []byte("lim/over"), Value: []byte("1")}}}
		inline := l.MaxBytes
		if l.ValueThreshold > 0 {
			inline = l.ValueThreshold - 1
		}
		for i := 0; i*inline <= l.MaxBytes; i++ {
			tooBig.Entries = append(tooBig.Entries, store.Entry{Queue: qb, Offset: uint64(i), Value: make([]byte, inline)})
		}
		batches := []*store.Batch{tooMany, tooBig}
		if l.MaxValueSize > 0 {
			batches = append(batches, &store.Batch{
				Entries: []store.Entry{{Queue: qb, Offset: 0, Value: make([]byte, l.MaxValueSize+1)}},
				Meta:    []store.MetaOp{{Key: []byte("lim/over"), Value: []byte("1")}},
			})
		}
		for _, b := range batches {
			require.False(t, l.Allows(b))
			require.ErrorIs(t, s.Write(b), store.ErrBatchTooLarge)
			require.Equal(t, bounds{}, getBounds(t, s, qb))
			_, err := s.GetMeta([]byte("lim/over"))
			require.ErrorIs(t, err, store.ErrNotFound)
		}
	})

	t.Run("BoundsAndDeleteRange", func(t *testing.T) {
		s := start(t, h).s
		require.Equal(t, bounds{}, getBounds(t, s, q), "empty")
		fill(t, s, q, 5, 15, 30)
		require.Equal(t, bounds{5, 15, true}, getBounds(t, s, q))

		require.NoError(t, s.DeleteRange(q, 0, 8)) // prefix, from below first
		require.Equal(t, bounds{8, 15, true}, getBounds(t, s, q))
		require.NoError(t, s.DeleteRange(q, 10, 12)) // middle
		require.Equal(t, bounds{8, 15, true}, getBounds(t, s, q))
		require.Equal(t, []uint64{8, 9, 12, 13, 14}, offsets(readAll(t, s, q)))
		require.NoError(t, s.DeleteRange(q, 14, 15)) // last
		require.Equal(t, bounds{8, 14, true}, getBounds(t, s, q))
		require.NoError(t, s.DeleteRange(q, 9, 8)) // to < from: no-op
		require.NoError(t, s.DeleteRange(q, 9, 9)) // empty range: no-op
		require.NoError(t, s.DeleteRange(q, 100, 200))
		require.Equal(t, []uint64{8, 9, 12, 13}, offsets(readAll(t, s, q)))
		require.NoError(t, s.Reclaim())

		// Appending after a deleted tail continues the queue.
		write(t, s, store.Entry{Queue: q, Offset: 14, Value: val(q, 14, 30)})
		require.Equal(t, bounds{8, 15, true}, getBounds(t, s, q))

		require.NoError(t, s.DeleteRange(q, 0, math.MaxUint64)) // all
		require.Equal(t, bounds{}, getBounds(t, s, q))
		require.Empty(t, readAll(t, s, q))
		require.NoError(t, s.DeleteRange(q, 0, math.MaxUint64)) // again, on nothing
		require.NoError(t, s.Reclaim())
		require.NoError(t, s.Sync())
	})

	t.Run("DeleteRangeLarge", func(t *testing.T) {
		// More records than one batch may delete, so the deletion takes
		// several transactions.
		s := start(t, h).s
		n := uint64(2*s.Limits().MaxEntries + 7)
		if s.Limits().MaxEntries == 0 {
			n = 5000
		}
		fill(t, s, q, 0, n, 8)
		require.Equal(t, bounds{0, n, true}, getBounds(t, s, q))
		require.NoError(t, s.DeleteRange(q, 0, n-3))
		require.Equal(t, bounds{n - 3, n, true}, getBounds(t, s, q))
		recs := readAll(t, s, q)
		require.Equal(t, span(n-3, n), offsets(recs))
		requireValues(t, q, 8, recs)
		require.NoError(t, s.Reclaim())
	})

	t.Run("DropQueue", func(t *testing.T) {
		s := start(t, h).s
		other := store.QueueID{Topic: 1, Queue: 3}
		fill(t, s, q, 0, 50, 64)
		fill(t, s, other, 0, 50, 64)
		putMeta(t, s, "keep", "me")
		require.NoError(t, s.DropQueue(q))
		require.Equal(t, bounds{}, getBounds(t, s, q))
		require.Empty(t, readAll(t, s, q))
		require.Equal(t, bounds{0, 50, true}, getBounds(t, s, other))
		requireValues(t, other, 64, readAll(t, s, other))
		v, err := s.GetMeta([]byte("keep"))
		require.NoError(t, err)
		require.Equal(t, "me", string(v))

		require.NoError(t, s.DropQueue(q), "dropping an empty queue")
		require.NoError(t, s.DropQueue(store.QueueID{Topic: 99}), "dropping an unknown queue")
		fill(t, s, q, 100, 110, 64)
		require.Equal(t, bounds{100, 110, true}, getBounds(t, s, q), "writable after drop")
	})

	t.Run("Metadata", func(t *testing.T) {
		s := start(t, h).s
		_, err := s.GetMeta([]byte("missing"))
		require.ErrorIs(t, err, store.ErrNotFound)

		// A record and metadata keys that spell record keys, in every way
		// the two could be confused.
		rq := store.QueueID{Topic: 1, Queue: 2}
		write(t, s, store.Entry{Queue: rq, Offset: 5, Value: []byte("record")})
		recordLike := "m\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x05"
		queueLike := "\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x06"
		putMeta(t, s,
			"a/1", "one", "a/2", "two", "a/10", "ten", "a", "bare", "b/1", "bee",
			"", "empty key", "\xff\xff", "high", "\xff", "high1", "\x00", "zero",
			recordLike, "meta5", queueLike, "meta6",
		)
		for k, want := range map[string]string{
			"a/1": "one", "a": "bare", "": "empty key", "\xff\xff": "high",
			recordLike: "meta5", queueLike: "meta6",
		} {
			v, err := s.GetMeta([]byte(k))
			require.NoError(t, err, "key %q", k)
			require.Equal(t, want, string(v), "key %q", k)
		}
		recs := readAll(t, s, rq)
		require.Len(t, recs, 1)
		require.Equal(t, "record", string(recs[0].Value))
		require.Equal(t, bounds{5, 6, true}, getBounds(t, s, rq))
		for _, mq := range []store.QueueID{{}, {Topic: 0x6d000000}, {Topic: 0x00000001, Queue: 0x00000002}} {
			if mq != rq {
				require.Equal(t, bounds{}, getBounds(t, s, mq))
			}
		}

		require.Equal(t, [][2]string{{"a/1", "one"}, {"a/10", "ten"}, {"a/2", "two"}}, allMeta(t, s, "a/"))
		require.Equal(t, [][2]string{{"a", "bare"}, {"a/1", "one"}, {"a/10", "ten"}, {"a/2", "two"}}, allMeta(t, s, "a"))
		require.Equal(t, [][2]string{{"\xff", "high1"}, {"\xff\xff", "high"}}, allMeta(t, s, "\xff"))
		require.Equal(t, [][2]string{{"\xff\xff", "high"}}, allMeta(t, s, "\xff\xff"))
		require.Equal(t, [][2]string{{recordLike, "meta5"}}, allMeta(t, s, "m"))
		require.Empty(t, allMeta(t, s, "zzz"))
		all := allMeta(t, s, "")
		require.Len(t, all, 11)
		require.Equal(t, [2]string{"", "empty key"}, all[0])
		require.Equal(t, [2]string{"\x00", "zero"}, all[1])
		require.Equal(t, [2]string{"\xff\xff", "high"}, all[10])

		// Overwrite and delete.
		putMeta(t, s, "a/1", "uno")
		require.NoError(t, s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("a/2"), Delete: true}}}))
		require.Equal(t, [][2]string{{"a/1", "uno"}, {"a/10", "ten"}}, allMeta(t, s, "a/"))
		_, err = s.GetMeta([]byte("a/2"))
		require.ErrorIs(t, err, store.ErrNotFound)

		// fn's error stops the scan and is returned.
		stop := errors.New("stop")
		calls := 0
		err = s.ScanMeta([]byte(""), func(k, v []byte) error {
			calls++
			return fmt.Errorf("wrapped: %w", stop)
		})
		require.ErrorIs(t, err, stop)
		require.Equal(t, 1, calls)

		// Many keys (more than one internal chunk), and fn calling back
		// into the store.
		var b store.Batch
		for i := range 700 {
			b.Meta = append(b.Meta, store.MetaOp{Key: fmt.Appendf(nil, "many/%04d", i), Value: fmt.Appendf(nil, "%d", i)})
		}
		require.NoError(t, s.Write(&b))
		i := 0
		require.NoError(t, s.ScanMeta([]byte("many/"), func(k, v []byte) error {
			require.Equal(t, fmt.Sprintf("many/%04d", i), string(k))
			require.Equal(t, fmt.Sprint(i), string(v))
			got, err := s.GetMeta(k)
			require.NoError(t, err)
			require.Equal(t, v, got)
			i++
			return nil
		}))
		require.Equal(t, 700, i)
	})

	t.Run("OverwriteAndOutOfOrder", func(t *testing.T) {
		s := start(t, h).s
		fill(t, s, q, 0, 5, 10)
		write(t, s, store.Entry{Queue: q, Offset: 2, Value: []byte("new two")})
		recs := readAll(t, s, q)
		require.Equal(t, span(0, 5), offsets(recs))
		require.Equal(t, "new two", string(recs[2].Value))

		write(t, s, store.Entry{Queue: q, Offset: 10, Value: []byte("ten")})
		write(t, s, store.Entry{Queue: q, Offset: 7, Value: []byte("seven")},
			store.Entry{Queue: q, Offset: 8, Value: []byte("eight")})
		write(t, s, store.Entry{Queue: q, Offset: 8, Value: []byte("EIGHT")},
			store.Entry{Queue: q, Offset: 6, Value: []byte("six")})
		recs = readAll(t, s, q)
		require.Equal(t, []uint64{0, 1, 2, 3, 4, 6, 7, 8, 10}, offsets(recs))
		require.Equal(t, "six", string(recs[5].Value))
		require.Equal(t, "EIGHT", string(recs[7].Value))
		require.Equal(t, bounds{0, 11, true}, getBounds(t, s, q))

		// Within one batch the later write of an offset wins.
		write(t, s, store.Entry{Queue: q, Offset: 3, Value: []byte("first")},
			store.Entry{Queue: q, Offset: 3, Value: []byte("second")})
		recs, err := s.Read(q, 3, 4, 0, 0)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		require.Equal(t, "second", string(recs[0].Value))
	})

	// A small batch that writes into the head of a queue and appends at its
	// end is within Limits whatever the queue holds between the two, so it
	// commits, and the records it did not name are kept as they were.
	t.Run("SparseWriteAcrossLargeQueue", func(t *testing.T) {
		s := start(t, h).s
		l := s.Limits()
		if l.MaxBytes == 0 {
			t.Skip("store has no byte limit")
		}
		const n = 100
		end := uint64(3 * l.MaxBytes / n) // three batches' worth of bytes
		fill(t, s, q, 0, end, n)
		b := &store.Batch{Entries: []store.Entry{
			{Queue: q, Offset: 0, Value: []byte("head")},
			{Queue: q, Offset: end, Value: []byte("tail")},
		}}
		require.True(t, l.Allows(b))
		require.NoError(t, s.Write(b))
		recs := readAll(t, s, q)
		require.Equal(t, span(0, end+1), offsets(recs))
		require.Equal(t, "head", string(recs[0].Value))
		require.Equal(t, "tail", string(recs[end].Value))
		requireValues(t, q, n, recs[1:end])
	})

	t.Run("CopiesInAndOut", func(t *testing.T) {
		s := start(t, h).s
		v := []byte("original")
		k, mv := []byte("key"), []byte("meta")
		require.NoError(t, s.Write(&store.Batch{
			Entries: []store.Entry{{Queue: q, Offset: 0, Value: v}},
			Meta:    []store.MetaOp{{Key: k, Value: mv}},
		}))
		copy(v, "XXXXXXXX")
		copy(k, "YYY")
		copy(mv, "ZZZZ")

		recs := readAll(t, s, q)
		require.Equal(t, "original", string(recs[0].Value))
		copy(recs[0].Value, "mutation")
		require.Equal(t, "original", string(readAll(t, s, q)[0].Value))

		got, err := s.GetMeta([]byte("key"))
		require.NoError(t, err)
		require.Equal(t, "meta", string(got))
		copy(got, "WWWW")
		require.NoError(t, s.ScanMeta(nil, func(k, v []byte) error {
			copy(k, "QQQ")
			copy(v, "RRRR")
			return nil
		}))
		require.Equal(t, [][2]string{{"key", "meta"}}, allMeta(t, s, ""))
	})

	t.Run("Size", func(t *testing.T) {
		s := start(t, h).s
		before, err := s.Size()
		require.NoError(t, err)
		require.GreaterOrEqual(t, before, int64(0))
		fill(t, s, q, 0, 500, 1000)
		require.NoError(t, s.Sync())
		after, err := s.Size()
		require.NoError(t, err)
		if h.sizeTracksWrites {
			require.Greater(t, after, before)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		x := start(t, h)
		s := x.s
		fill(t, s, q, 0, 3, 10)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "second Close")
		_ = s.Limits()
		b := &store.Batch{Entries: []store.Entry{{Queue: q, Offset: 3}}}
		require.ErrorIs(t, s.Write(b), store.ErrClosed)
		require.ErrorIs(t, s.Write(&store.Batch{}), store.ErrClosed)
		require.ErrorIs(t, s.Sync(), store.ErrClosed)
		_, err := s.Read(q, 0, 10, 0, 0)
		require.ErrorIs(t, err, store.ErrClosed)
		_, _, _, err = s.Bounds(q)
		require.ErrorIs(t, err, store.ErrClosed)
		require.ErrorIs(t, s.DeleteRange(q, 0, 1), store.ErrClosed)
		require.ErrorIs(t, s.DropQueue(q), store.ErrClosed)
		_, err = s.GetMeta([]byte("k"))
		require.ErrorIs(t, err, store.ErrClosed)
		require.ErrorIs(t, s.ScanMeta(nil, func(k, v []byte) error { return nil }), store.ErrClosed)
		_, err = s.Size()
		require.ErrorIs(t, err, store.ErrClosed)
		require.ErrorIs(t, s.Reclaim(), store.ErrClosed)
		// The cleanup's Close is a third one.
	})

	t.Run("Concurrent", func(t *testing.T) {
		s := start(t, h).s
		const writers, perWriter, batch = 3, 600, 20
		queue := func(w int) store.QueueID { return store.QueueID{Topic: 5, Queue: uint32(w)} }
		var (
			wg      sync.WaitGroup
			writing sync.WaitGroup
			done    = make(chan struct{})
			errs    = make(chan error, 64)
		)
		report := func(err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}
		for w := range writers {
			wg.Add(1)
			writing.Add(1)
			go func() {
				defer wg.Done()
				defer writing.Done()
				q := queue(w)
				for off := uint64(0); off < perWriter; off += batch {
					var b store.Batch
					for i := range uint64(batch) {
						b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off + i, Value: val(q, off+i, 50)})
					}
					b.Meta = []store.MetaOp{{Key: fmt.Appendf(nil, "w/%d", w), Value: fmt.Appendf(nil, "%d", off+batch)}}
					report(s.Write(&b))
				}
			}()
		}
		// A queue that is filled, trimmed and dropped over and over.
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := store.QueueID{Topic: 6}
			for i := uint64(0); ; i++ {
				select {
				case <-done:
					return
				default:
				}
				var b store.Batch
				for j := range uint64(10) {
					b.Entries = append(b.Entries, store.Entry{Queue: scratch, Offset: i*10 + j, Value: []byte("s")})
				}
				report(s.Write(&b))
				report(s.DeleteRange(scratch, 0, i*10+5))
				if i%5 == 4 {
					report(s.DropQueue(scratch))
				}
				report(s.Sync())
				report(s.Reclaim())
				_, err := s.Size()
				report(err)
			}
		}()
		for r := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(r), 7))
				for {
					select {
					case <-done:
						return
					default:
					}
					q := queue(rng.IntN(writers))
					from := uint64(rng.IntN(perWriter))
					recs, err := s.Read(q, from, from+50, 10, 0)
					report(err)
					for i, rec := range recs {
						if rec.Offset != from+uint64(i) || !bytes.Equal(rec.Value, val(q, rec.Offset, 50)) {
							report(fmt.Errorf("queue %v: bad record %d at %d", q, rec.Offset, i))
						}
					}
					first, next, ok, err := s.Bounds(q)
					report(err)
					if ok && (first != 0 || next == 0 || next%batch != 0) {
						report(fmt.Errorf("queue %v: bounds [%d, %d)", q, first, next))
					}
					report(s.ScanMeta([]byte("w/"), func(k, v []byte) error { return nil }))
					_, err = s.GetMeta([]byte("w/0"))
					if err != nil && !errors.Is(err, store.ErrNotFound) {
						report(err)
					}
				}
			}()
		}
		writing.Wait()
		close(done)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		for w := range writers {
			q := queue(w)
			recs := readAll(t, s, q)
			require.Equal(t, span(0, perWriter), offsets(recs))
			requireValues(t, q, 50, recs)
			v, err := s.GetMeta(fmt.Appendf(nil, "w/%d", w))
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(perWriter), string(v))
		}
	})

	if !h.durable {
		return
	}

	t.Run("Reopen", func(t *testing.T) {
		x := start(t, h)
		qs := []store.QueueID{{Topic: 1, Queue: 0}, {Topic: 1, Queue: 1}, {Topic: 2, Queue: 0xFF}, {Topic: 3, Queue: 0}}
		for i, q := range qs {
			fill(t, x.s, q, uint64(i*10), uint64(i*10+300), 100*(i+1))
		}
		write(t, x.s, store.Entry{Queue: qs[0], Offset: 1000, Value: bytes.Repeat([]byte{7}, 5000)})
		putMeta(t, x.s, "topic/a", "1", "topic/b", "2", "off/a/0", "17", "", "e")
		require.NoError(t, x.s.DeleteRange(qs[1], 0, 50))
		require.NoError(t, x.s.DeleteRange(qs[1], 100, 110))
		require.NoError(t, x.s.DropQueue(qs[2]))

		type snapshot struct {
			Recs   map[store.QueueID][]store.Record
			Bounds map[store.QueueID]bounds
			Meta   [][2]string
		}
		snap := func() snapshot {
			sn := snapshot{Recs: map[store.QueueID][]store.Record{}, Bounds: map[store.QueueID]bounds{}, Meta: allMeta(t, x.s, "")}
			for _, q := range qs {
				sn.Recs[q] = readAll(t, x.s, q)
				sn.Bounds[q] = getBounds(t, x.s, q)
			}
			return sn
		}
		before := snap()
		require.Equal(t, bounds{}, before.Bounds[qs[2]])
		require.Equal(t, bounds{50, 310, true}, before.Bounds[qs[1]])

		require.NoError(t, x.s.Sync())
		x.reopen()
		require.Equal(t, before, snap(), "after Sync and reopen")

		// Without an explicit Sync, Close still flushes.
		require.NoError(t, x.s.DeleteRange(qs[0], 0, 100))
		putMeta(t, x.s, "topic/c", "3")
		require.NoError(t, x.s.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("topic/a"), Delete: true}}}))
		fill(t, x.s, qs[2], 0, 10, 10)
		before = snap()
		x.reopen()
		require.Equal(t, before, snap(), "after Close and reopen")
		require.Equal(t, bounds{0, 10, true}, before.Bounds[qs[2]])
		require.Equal(t, [][2]string{{"topic/b", "2"}, {"topic/c", "3"}}, allMeta(t, x.s, "topic/"))
	})
}
