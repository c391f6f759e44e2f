package cluster

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func newTestFSM(t *testing.T, bo *store.BadgerOptions) (*fsm, *store.Badger) {
	t.Helper()
	if bo == nil {
		o := store.DefaultBadgerOptions()
		bo = &o
	}
	bo.InMemory = true
	st, err := store.OpenBadger("", bo)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	f, err := newFSM(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	return f, st
}

// fsmScript is a log exercising every kind of entry and answer: writes that
// apply, a forged append refused (which ends the tenure), writes of the
// ended tenure ignored, a watermark followed by an append that depends on
// it, a deletion, an entry that does not decode and a configuration entry.
func fsmScript() []*raft.Log {
	q1, q2 := store.QueueID{Topic: 1}, store.QueueID{Topic: 1, Queue: 1}
	rec := func(q store.QueueID, offs ...uint64) []store.Entry {
		var es []store.Entry
		for _, o := range offs {
			es = append(es, store.Entry{Queue: q, Offset: o, Value: fmt.Appendf(nil, "%d/%d@%d", q.Topic, q.Queue, o)})
		}
		return es
	}
	write := func(tenure uint64, meta []store.MetaOp, es ...[]store.Entry) []byte {
		b := &store.Batch{Meta: meta}
		for _, e := range es {
			b.Entries = append(b.Entries, e...)
		}
		return encodeBatch(tenure, b)
	}
	kv := func(k, v string) []store.MetaOp { return []store.MetaOp{{Key: []byte(k), Value: []byte(v)}} }
	wm := []store.MetaOp{{Key: watermarkKey(q2), Value: binary.BigEndian.AppendUint64(nil, 10)}}
	data := [][]byte{
		encodeTenure(1, "n1", "c1", ""),
		write(1, kv("k", "a"), rec(q1, 0, 1, 2)),
		write(1, nil, rec(q1, 3), rec(q2, 0)),
		write(1, nil, rec(q1, 5)), // a gap: refused, the tenure ends
		write(1, nil, rec(q1, 4)), // of the ended tenure: ignored
		encodeTenure(2, "n2", "c2", ""),
		write(2, kv("k", "b"), rec(q1, 4, 5)),
		write(2, nil, rec(q2, 1)),
		write(2, wm),                          // q2 continues at 10 from here
		write(2, nil, rec(q2, 10)),            // passes only against the watermark
		{0xff, 1, 2},                          // does not decode
		encodeRange(entryDelete, 2, q1, 0, 2), // offsets 0 and 1
		write(2, kv("k", "c"), rec(q1, 6), rec(q2, 11)),
		nil,                        // a configuration entry
		write(2, nil, rec(q2, 11)), // an overlap: refused
		write(2, nil, rec(q2, 12)), // the tenure ended: ignored
		encodeTenure(3, "n1", "c1", ""),
		write(3, nil, rec(q2, 12, 13), rec(q1, 7)),
		write(3, kv("k", "d"), rec(q1, 8)),
	}
	logs := make([]*raft.Log, len(data))
	for i, d := range data {
		logs[i] = &raft.Log{Index: uint64(i + 10), Term: 1, Type: raft.LogCommand, Data: d}
		if d == nil {
			logs[i].Type, logs[i].Data = raft.LogConfiguration, []byte("ignored")
		}
	}
	return logs
}

// answerKind names an FSM answer for comparison.
func answerKind(a any) string {
	err, _ := a.(error)
	switch {
	case a == nil:
		return "ok"
	case errors.Is(err, errOffsetMismatch):
		return "refused"
	case errors.Is(err, errStaleTenure):
		return "stale"
	case errors.Is(err, errBadEntry):
		return "bad"
	}
	return fmt.Sprintf("other: %v", a)
}

// dump is what a store holds of the script's queues and key.
func dump(t *testing.T, st *store.Badger) string {
	t.Helper()
	var s string
	for _, q := range []store.QueueID{{Topic: 1}, {Topic: 1, Queue: 1}} {
		recs, err := st.Read(q, 0, 1000, 1000, 1<<20)
		require.NoError(t, err)
		for _, r := range recs {
			s += fmt.Sprintf("%d:%s ", r.Offset, r.Value)
		}
		s += "| "
	}
	v, err := st.GetMeta([]byte("k"))
	if errors.Is(err, store.ErrNotFound) {
		return s + "<no k>"
	}
	require.NoError(t, err)
	return s + string(v)
}

// ApplyBatch gives every entry the answer Apply gives it alone, and leaves
// the same store and state, however the entries are grouped.
func TestFSM_ApplyBatchAnswersAsOneByOne(t *testing.T) {
	logs := fsmScript()
	alone, aloneSt := newTestFSM(t, nil)
	var want []string
	for _, l := range logs {
		want = append(want, answerKind(alone.Apply(l)))
	}
	assert.Equal(t, []string{"ok", "ok", "ok", "refused", "stale", "ok", "ok", "ok", "ok", "ok", "bad", "ok", "ok", "ok", "refused", "stale", "ok", "ok", "ok"}, want)
	wantStore, wantState := dump(t, aloneSt), alone.current()
	assert.Equal(t, "2:1/0@2 3:1/0@3 4:1/0@4 5:1/0@5 6:1/0@6 7:1/0@7 8:1/0@8 | 0:1/1@0 1:1/1@1 10:1/1@10 11:1/1@11 12:1/1@12 13:1/1@13 | d", wantStore)
	assert.Equal(t, uint64(len(logs)+9), wantState.applied)

	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 30 {
		f, st := newTestFSM(t, nil)
		var got []string
		for rest := logs; len(rest) > 0; {
			n := len(rest) // round 0: the whole log in one call
			if round > 0 {
				n = 1 + rng.IntN(len(rest))
			}
			for _, a := range f.ApplyBatch(rest[:n]) {
				got = append(got, answerKind(a))
			}
			rest = rest[n:]
		}
		require.Equal(t, want, got, "round %d", round)
		require.Equal(t, wantStore, dump(t, st), "round %d", round)
		require.Equal(t, wantState, f.current(), "round %d", round)

		// A restarted node reads the state back; applying the log again
		// changes nothing.
		again, err := newFSM(st, f.log)
		require.NoError(t, err)
		require.Equal(t, wantState, again.current())
		for _, a := range again.ApplyBatch(logs) {
			require.Nil(t, a)
		}
		require.Equal(t, wantStore, dump(t, st))
	}
}

// Entries that together exceed the store's batch limits are written in
// several writes, each within them (one write of them all would be
// refused, and the node would stop following the log).
func TestFSM_ApplyBatchSplitsAtTheStoreLimits(t *testing.T) {
	bo := store.DefaultBadgerOptions()
	bo.MemTableSize = 1 << 20
	f, st := newTestFSM(t, &bo)
	lim := st.Limits()
	per := lim.MaxEntries / 3 // three entries' records exceed one write
	require.Greater(t, per, 1)
	q := store.QueueID{Topic: 2}
	logs := []*raft.Log{{Index: 1, Type: raft.LogCommand, Data: encodeTenure(1, "n1", "c1", "")}}
	var off uint64
	for i := range 8 {
		b := &store.Batch{}
		for range per {
			b.Entries = append(b.Entries, store.Entry{Queue: q, Offset: off, Value: []byte("v")})
			off++
		}
		logs = append(logs, &raft.Log{Index: uint64(i + 2), Type: raft.LogCommand, Data: encodeBatch(1, b)})
	}
	require.Greater(t, 8*per, lim.MaxEntries)
	for i, a := range f.ApplyBatch(logs) {
		require.Nil(t, a, "entry %d", i)
	}
	first, next, ok, err := st.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(0), first)
	assert.Equal(t, off, next)
	assert.NoError(t, f.err())
}

// A group's write holds its records queue by queue in offset order (the
// order the store sorts them into, so that its sort finds nothing to do),
// every record once, and its metadata in log order before the state.
func TestWriteGroup_BatchInStoreOrder(t *testing.T) {
	g := newWriteGroup(store.Limits{})
	q := func(topic, queue uint32) store.QueueID { return store.QueueID{Topic: topic, Queue: queue} }
	rec := func(qq store.QueueID, off uint64) store.Entry {
		return store.Entry{Queue: qq, Offset: off, Value: fmt.Appendf(nil, "%d/%d@%d", qq.Topic, qq.Queue, off)}
	}
	first := &store.Batch{
		Entries: []store.Entry{rec(q(2, 1), 0), rec(q(1, 3), 7), rec(q(2, 1), 1), rec(delayLog, 4), rec(q(1, 0), 5)},
		Meta:    []store.MetaOp{{Key: []byte("a"), Value: []byte("1")}},
	}
	second := &store.Batch{
		Entries: []store.Entry{rec(q(1, 3), 8), rec(delayLog, 9), rec(q(2, 1), 2), rec(q(1, 0), 6)},
		Meta:    []store.MetaOp{{Key: []byte("a"), Delete: true}, {Key: []byte("b"), Value: []byte("2")}},
	}
	g.add(first, nil, 11, 0, fsmState{applied: 11, tenure: 1})
	g.add(second, nil, 12, 1, fsmState{applied: 12, tenure: 1})
	b := g.batch()
	var got []string
	for _, e := range b.Entries {
		got = append(got, string(e.Value))
	}
	assert.Equal(t, []string{"0/0@4", "0/0@9", "1/0@5", "1/0@6", "1/3@7", "1/3@8", "2/1@0", "2/1@1", "2/1@2"}, got)
	require.Len(t, b.Meta, 4)
	assert.Equal(t, "a", string(b.Meta[0].Key))
	assert.True(t, b.Meta[1].Delete)
	assert.Equal(t, "b", string(b.Meta[2].Key))
	assert.Equal(t, stateKey, b.Meta[3].Key)
	s, err := decodeState(b.Meta[3].Value)
	require.NoError(t, err)
	assert.Equal(t, uint64(12), s.applied)
	assert.Equal(t, uint64(11), g.first)
	assert.Equal(t, []int{0, 1}, g.held)

	// Emptied, it keeps nothing of the entries it held.
	g.reset()
	assert.True(t, g.empty())
	add := &store.Batch{Entries: []store.Entry{rec(q(1, 0), 7)}}
	g.add(add, nil, 13, 0, fsmState{applied: 13})
	assert.Len(t, g.batch().Entries, 1)
	assert.Len(t, g.batch().Meta, 1)
}

// bufferSink is a raft.SnapshotSink into memory.
type bufferSink struct{ bytes.Buffer }

func (*bufferSink) ID() string    { return "test" }
func (*bufferSink) Close() error  { return nil }
func (*bufferSink) Cancel() error { return nil }

// snapshotFrames returns where each frame of a store snapshot ends, the
// magic line first (store.BadgerSnapshot.WriteTo's format).
func snapshotFrames(t *testing.T, b []byte) []int {
	t.Helper()
	at := bytes.IndexByte(b, '\n') + 1
	ends := []int{at}
	for at < len(b) {
		klen, n := binary.Uvarint(b[at:])
		require.Positive(t, n)
		at += n
		vlen, n := binary.Uvarint(b[at:])
		require.Positive(t, n)
		at += n + int(klen) + int(vlen)
		ends = append(ends, at)
	}
	require.Equal(t, len(b), at)
	return ends
}

// An install cut short (here: the stream ends early) breaks the FSM with
// an error that is not a full disk, so retry replays nothing onto the part
// of the snapshot the store holds, and entries are refused. A restart keeps
// it so, whichever keys the cut left (the state key among them or not),
// and a whole snapshot installed then gives the leader's store and state.
// The store's memtables are small, so that a restore commits its keys in
// several transactions and a cut leaves some of them.
func TestFSM_RestoreCutShortWaitsForAWholeSnapshot(t *testing.T) {
	small := func() *store.BadgerOptions {
		o := store.DefaultBadgerOptions()
		o.MemTableSize = 1 << 20
		return &o
	}
	src, srcSt := newTestFSM(t, small())
	logs := fsmScript()
	// Metadata after the state key, in several transactions' worth.
	for i := range 4 {
		var meta []store.MetaOp
		for j := range 500 {
			meta = append(meta, store.MetaOp{Key: fmt.Appendf(nil, "m%d-%03d", i, j), Value: []byte("v")})
		}
		logs = append(logs, &raft.Log{Index: logs[len(logs)-1].Index + 1, Term: 1, Type: raft.LogCommand, Data: encodeBatch(3, &store.Batch{Meta: meta})})
	}
	src.ApplyBatch(logs)
	require.NoError(t, src.err())
	fs, err := src.Snapshot()
	require.NoError(t, err)
	var sink bufferSink
	require.NoError(t, fs.Persist(&sink))
	fs.Release()
	whole := sink.Bytes()
	mKeys := func(st *store.Badger) int {
		n := 0
		require.NoError(t, st.ScanMeta([]byte("m"), func(k, v []byte) error { n++; return nil }))
		return n
	}
	want, wantM := dump(t, srcSt), mKeys(srcSt)
	require.Equal(t, 2000, wantM)
	// The FSM's header (the applied index, the cluster ID), then the
	// store's frames.
	hl := len(appendSnapHeader(nil, snapHeader{clusterID: src.current().clusterID}))
	ends := snapshotFrames(t, whole[hl:])
	var cuts []int
	for i, end := range ends[:len(ends)-1] {
		if i < 30 || i%97 == 0 || i > len(ends)-30 {
			cuts = append(cuts, hl+end, hl+end+1)
		}
	}
	partial := 0
	for _, cut := range cuts {
		f, st := newTestFSM(t, small())
		replays := 0
		f.getLog = func(uint64, *raft.Log) error { replays++; return errors.New("test: no log") }
		err := f.Restore(io.NopCloser(bytes.NewReader(whole[:cut])))
		require.Error(t, err, "cut at %d", cut)
		require.Error(t, f.err())
		require.NotErrorIs(t, f.err(), store.ErrNoSpace)
		f.handed = logs[len(logs)-1].Index
		f.retry()
		require.Zero(t, replays, "nothing replayed onto part of a snapshot")
		before, beforeM := dump(t, st), mKeys(st)
		if beforeM > 0 {
			partial++
		}
		next := &raft.Log{Index: logs[len(logs)-1].Index + 1, Term: 1, Type: raft.LogCommand,
			Data: encodeBatch(3, &store.Batch{Meta: []store.MetaOp{{Key: []byte("k"), Value: []byte("e")}}})}
		require.Error(t, f.ApplyBatch([]*raft.Log{next})[0].(error))
		require.Equal(t, before, dump(t, st), "an entry applied onto part of a snapshot")

		// The node restarts on that store.
		again, err := newFSM(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		require.ErrorIs(t, again.err(), errRestoreCutShort, "cut at %d", cut)
		require.Zero(t, again.current().applied)
		require.NoError(t, again.Restore(io.NopCloser(bytes.NewReader(whole))))
		require.NoError(t, again.err())
		require.Equal(t, want, dump(t, st), "cut at %d", cut)
		require.Equal(t, wantM, mKeys(st), "cut at %d, %d metadata keys before", cut, beforeM)
		require.Equal(t, src.current(), again.current())
	}
	require.Positive(t, partial, "no cut left part of the metadata: the test shows nothing")
}

// pausedSink is a snapshot sink whose second write (the first of the
// store's frames after the FSM's header) waits until released.
type pausedSink struct {
	bufferSink
	writes  int
	paused  chan struct{} // closed when the second write waits
	release chan struct{}
}

func (s *pausedSink) Write(p []byte) (int, error) {
	if s.writes++; s.writes == 2 {
		close(s.paused)
		<-s.release
	}
	return s.bufferSink.Write(p)
}

// Raft persists a snapshot of the FSM on its own goroutine while the FSM
// goes on, and a follower may install the leader's snapshot meanwhile.
// The snapshot taken before the install then either persists as it was
// taken or fails; it never persists as the store the install left half
// or wholly dropped under it, which Raft would keep as a whole snapshot at
// the older index (it persisted an empty store, 44 bytes, with no error).
func TestFSM_SnapshotRestoredOverWhilePersistingFails(t *testing.T) {
	q := store.QueueID{Topic: 1}
	// fill applies n entries of 64 records of about 200 bytes (more than
	// the 1 MiB a snapshot buffers before its first write, for n >= 100).
	fill := func(f *fsm, tag string, n int) {
		logs := []*raft.Log{{Index: 1, Term: 1, Type: raft.LogCommand, Data: encodeTenure(1, "n1", "c1", "")}}
		for i := range n {
			var es []store.Entry
			for j := range 64 {
				off := uint64(i*64 + j)
				es = append(es, store.Entry{Queue: q, Offset: off, Value: bytes.Repeat(fmt.Appendf(nil, "%s-%06d|", tag, off), 20)})
			}
			logs = append(logs, &raft.Log{Index: uint64(i + 2), Term: 1, Type: raft.LogCommand, Data: encodeBatch(1, &store.Batch{Entries: es})})
		}
		for i, a := range f.ApplyBatch(logs) {
			require.Nil(t, a, "entry %d", i+1)
		}
	}
	leader, _ := newTestFSM(t, nil)
	fill(leader, "leader", 200)
	installed := persisted(t, leader)

	t.Run("installed before it persists", func(t *testing.T) {
		f, _ := newTestFSM(t, nil)
		fill(f, "own", 100)
		fs, err := f.Snapshot()
		require.NoError(t, err)
		defer fs.Release()
		require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(installed))))
		var sink bufferSink
		err = fs.Persist(&sink)
		require.Error(t, err, "persisted %d bytes of a store dropped under it", sink.Len())
		require.ErrorIs(t, err, store.ErrSnapshotRestoredOver)
	})
	t.Run("installed while it persists", func(t *testing.T) {
		f, _ := newTestFSM(t, nil)
		fill(f, "own", 100)
		fs, err := f.Snapshot()
		require.NoError(t, err)
		defer fs.Release()
		sink := &pausedSink{paused: make(chan struct{}), release: make(chan struct{})}
		done := make(chan error, 1)
		go func() { done <- fs.Persist(sink) }()
		<-sink.paused
		require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(installed))))
		close(sink.release)
		err = <-done
		require.Error(t, err, "persisted %d bytes of a store dropped under it", sink.Len())
		require.ErrorIs(t, err, store.ErrSnapshotRestoredOver)
	})
	// A snapshot taken after the install persists the installed store.
	f, _ := newTestFSM(t, nil)
	fill(f, "own", 100)
	require.NoError(t, f.Restore(io.NopCloser(bytes.NewReader(installed))))
	require.Equal(t, installed, persisted(t, f))
}
