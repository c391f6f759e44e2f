package store

import (
	"bytes"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeDisk makes s see free bytes free on its disk and counts the looks.
type fakeDisk struct {
	free  atomic.Int64
	looks atomic.Int64
	fail  atomic.Bool
}

func watchDisk(s *Badger, free int64) *fakeDisk {
	d := &fakeDisk{}
	d.free.Store(free)
	s.space.free = func(string) (int64, error) {
		d.looks.Add(1)
		if d.fail.Load() {
			return 0, errors.New("statfs failed")
		}
		return d.free.Load(), nil
	}
	s.space.checked = s.space.checked.AddDate(-1, 0, 0) // look at the next write
	return d
}

func TestBadger_NoSpaceRefusesWritesWhole(t *testing.T) {
	const mib = 1 << 20
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 4 * mib})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	// The default reserve: the memtables Badger holds, flushed, and a margin.
	require.Equal(t, int64(3*4*mib+4*mib), s.space.reserve)
	reserve := s.space.reserve
	q := QueueID{Topic: 1, Queue: 0}
	rec := func(off uint64) Entry { return Entry{Queue: q, Offset: off, Value: bytes.Repeat([]byte{'x'}, 100)} }
	commit := MetaOp{Key: []byte("offset"), Value: []byte("1")}

	d := watchDisk(s, reserve+mib)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{rec(0)}}))

	// Below the reserve: records are refused whole, the metadata of the
	// same batch with them; nothing is stored.
	d.free.Store(reserve - 1)
	err = s.Write(&Batch{Entries: []Entry{rec(1), rec(2)}, Meta: []MetaOp{commit}})
	require.ErrorIs(t, err, ErrNoSpace)
	assert.Contains(t, err.Error(), "MinFreeBytes")
	recs, err := s.Read(q, 0, 10, 10, 0)
	require.NoError(t, err)
	require.Len(t, recs, 1, "the refused write stored nothing")
	_, err = s.GetMeta(commit.Key)
	require.ErrorIs(t, err, ErrNotFound)

	// Metadata and deletions alone may use three quarters of the reserve.
	require.NoError(t, s.Write(&Batch{Meta: []MetaOp{commit}}))
	require.NoError(t, s.DeleteRange(q, 0, 1))
	d.free.Store(reserve / 8)
	require.ErrorIs(t, s.Write(&Batch{Meta: []MetaOp{commit}}), ErrNoSpace)
	require.ErrorIs(t, s.DeleteRange(q, 1, 2), ErrNoSpace)

	// Space freed: writes go in again.
	d.free.Store(100 * mib)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{rec(1)}}))

	// A failed look at the disk does not refuse writes.
	d.fail.Store(true)
	d.free.Store(0)
	s.space.checked = s.space.checked.AddDate(-1, 0, 0)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{rec(2)}}))
}

func TestBadger_NoSpaceLooksAtTheDiskSeldomUnlessNearlyFull(t *testing.T) {
	const mib = 1 << 20
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	q := QueueID{Topic: 1, Queue: 0}
	write := func(off uint64) error {
		return s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: off, Value: make([]byte, 100)}}})
	}
	// Far from the reserve: one look, then the count of what went in.
	d := watchDisk(s, s.space.reserve+100*mib)
	for i := range 100 {
		require.NoError(t, write(uint64(i)))
	}
	assert.Equal(t, int64(1), d.looks.Load())

	// The count runs out: the next write looks again, and is refused.
	s.space.budget = 0
	d.free.Store(s.space.reserve)
	require.ErrorIs(t, write(100), ErrNoSpace)
	assert.Equal(t, int64(2), d.looks.Load())

	// Near the reserve (under twice it free), every write looks.
	d.free.Store(s.space.reserve + s.space.reserve/2)
	for i := range 10 {
		require.NoError(t, write(uint64(100+i)))
	}
	assert.Equal(t, int64(12), d.looks.Load())
}

func TestBadger_NoSpaceCheckOff(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MinFreeBytes: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	d := watchDisk(s, 0)
	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: QueueID{Topic: 1}, Offset: 0, Value: []byte("x")}}}))
	assert.Zero(t, d.looks.Load())

	mem, err := OpenBadger("", &BadgerOptions{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mem.Close()) })
	assert.Nil(t, mem.space, "in memory: no disk to watch")
}

func TestBadger_NoSpaceStopsARestore(t *testing.T) {
	const mib = 1 << 20
	src, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	q := QueueID{Topic: 1, Queue: 0}
	for i := range 40 { // 2.5 MiB in 40 writes
		var b Batch
		for j := range 64 {
			b.Entries = append(b.Entries, Entry{Queue: q, Offset: uint64(i*64 + j), Value: make([]byte, 1000)})
		}
		require.NoError(t, src.Write(&b))
	}
	sn, err := src.Snapshot()
	require.NoError(t, err)
	var snap bytes.Buffer
	_, err = sn.WriteTo(&snap)
	require.NoError(t, err)
	sn.Release()

	dst, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dst.Close()) })
	d := watchDisk(dst, dst.space.reserve+mib/2) // not room for a MiB of it
	err = dst.Restore(bytes.NewReader(snap.Bytes()))
	require.ErrorIs(t, err, ErrNoSpace)
	assert.Positive(t, d.looks.Load())

	d.free.Store(100 * mib)
	require.NoError(t, dst.Restore(bytes.NewReader(snap.Bytes())))
	_, next, ok, err := dst.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(40*64), next)
}

func TestBadger_NoSpaceRefusesToOpenForWrites(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	reserve := s.space.reserve

	free := reserve/4 - 1
	var looked []string
	saved := freeSpace
	freeSpace = func(at string) (int64, error) {
		looked = append(looked, at)
		if at == dir+"/new" {
			return 0, fs.ErrNotExist
		}
		return free, nil
	}
	t.Cleanup(func() { freeSpace = saved })

	_, err = OpenBadger(dir, nil)
	require.ErrorIs(t, err, ErrNoSpace)
	assert.Contains(t, err.Error(), "open read-only")
	// Not yet created: its parent's file system is looked at.
	_, err = OpenBadger(dir+"/new", nil)
	require.ErrorIs(t, err, ErrNoSpace)
	assert.Equal(t, []string{dir, dir + "/new", dir}, looked)

	ro, err := OpenBadger(dir, &BadgerOptions{ReadOnly: true})
	require.NoError(t, err, "read-only writes nothing")
	require.NoError(t, ro.Close())
	off, err := OpenBadger(dir, &BadgerOptions{MinFreeBytes: -1})
	require.NoError(t, err, "the check turned off")
	require.NoError(t, off.Close())

	free = reserve / 4
	s, err = OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
}

// TestBadger_AdmitKeepsAMargin: Admit refuses what Write would refuse and
// what would leave less than half the reserve beyond Write's own keep,
// and writes nothing.
func TestBadger_AdmitKeepsAMargin(t *testing.T) {
	const mib = 1 << 20
	s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 4 * mib})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	reserve := s.space.reserve
	q := QueueID{Topic: 1, Queue: 0}
	recs := &Batch{Entries: []Entry{{Queue: q, Offset: 0, Value: bytes.Repeat([]byte{'x'}, 100)}}}
	meta := &Batch{Meta: []MetaOp{{Key: []byte("offset"), Value: []byte("1")}}}

	d := watchDisk(s, 2*reserve+mib)
	require.NoError(t, s.Admit(recs))
	require.NoError(t, s.Admit(meta))
	require.NoError(t, s.Admit(nil))

	// Between the reserve and one and a half of it: Write takes records,
	// Admit refuses them.
	d.free.Store(reserve + reserve/4)
	s.space.checked = s.space.checked.AddDate(-1, 0, 0)
	require.ErrorIs(t, s.Admit(recs), ErrNoSpace)
	require.NoError(t, s.Admit(meta), "metadata keeps a quarter of the reserve and an eighth of it")
	got, err := s.Read(q, 0, 10, 10, 0)
	require.NoError(t, err)
	require.Empty(t, got, "Admit writes nothing")
	require.NoError(t, s.Write(recs))

	// Below three eighths of the reserve metadata is refused by Admit,
	// not by Write.
	d.free.Store(reserve / 2)
	require.NoError(t, s.Admit(meta))
	d.free.Store(reserve * 3 / 10)
	require.ErrorIs(t, s.Admit(meta), ErrNoSpace)
	require.NoError(t, s.Write(meta))

	// Far from the reserve Admit trusts the count between looks, as Write
	// does, and does not spend it.
	d.free.Store(100 * mib)
	s.space.checked = s.space.checked.AddDate(-1, 0, 0)
	require.NoError(t, s.Admit(recs))
	looks := d.looks.Load()
	budget := s.space.budget
	for range 10 {
		require.NoError(t, s.Admit(recs))
	}
	assert.Equal(t, looks, d.looks.Load())
	assert.Equal(t, budget, s.space.budget)
}

// TestBadger_AdmitWithoutAGuard: a store that keeps no reserve (in memory,
// read-only, MinFreeBytes negative) admits every write.
func TestBadger_AdmitWithoutAGuard(t *testing.T) {
	for name, o := range map[string]*BadgerOptions{"in memory": {InMemory: true}, "check off": {MinFreeBytes: -1}} {
		t.Run(name, func(t *testing.T) {
			dir := ""
			if !o.InMemory {
				dir = t.TempDir()
			}
			s, err := OpenBadger(dir, o)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			require.NoError(t, s.Admit(&Batch{Entries: []Entry{{Queue: QueueID{Topic: 1}, Value: []byte("x")}}}))
			require.NoError(t, s.Admit(&Batch{Meta: []MetaOp{{Key: []byte("k"), Value: []byte("v")}}}))
		})
	}
}
