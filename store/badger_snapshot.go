package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/dgraph-io/badger/v4"
)

// Snapshots copy a whole Badger store: a replicated cluster (package
// cluster) sends one to a node that is too far behind to catch up from the
// log. The copy is the raw key space (records and metadata), so it does not
// depend on how records are packed.
//
// Format: snapshotMagic, then one frame per key — uvarint key length,
// uvarint value length, key, value — then a frame with an empty key. A
// stream without that final frame is truncated and refused.
var snapshotMagic = []byte("equeue-badger-snapshot-1\n")

// ErrBadSnapshot is returned when Restore is given a stream that is not a
// complete snapshot, or that holds a key the store could not read back (a
// record key of another width than a record key's). The store is then
// empty or partly loaded, and RestoreCutShort says so: restore a good
// snapshot before using it.
var ErrBadSnapshot = errors.New("store: bad snapshot")

// ErrRestoreRefused is matched, along with ErrBadSnapshot, by the error of
// a Restore given a stream that does not start with a snapshot's header:
// Restore refused it before it changed anything, so the store holds what
// it held and RestoreCutShort says what it said.
var ErrRestoreRefused = errors.New("store: restore refused before the store changed")

// restoringMeta is the metadata key Restore sets first, right after it
// emptied the store, and deletes last, once the whole snapshot is loaded
// and synced. A store that holds it after Restore failed, or after the
// process or the machine stopped during one, holds part of a snapshot:
// RestoreCutShort reports it. The mark is synced before any of the
// snapshot is loaded, so a store that kept any of the snapshot's keys
// through a crash kept the mark too. Snapshots leave it out.
var restoringMeta = []byte("\x00store/restoring")

// RestoreCutShort reports whether the store holds a snapshot that Restore
// did not finish loading (it failed, or the process stopped during it).
// Such a store holds part of the snapshot, in key order: the records of
// some queues and none of the metadata, or every record and some of the
// metadata. Only a Restore run to its end clears it.
func (s *Badger) RestoreCutShort() (bool, error) {
	_, cut, err := s.RestoreNote()
	return cut, err
}

// RestoreNote is RestoreCutShort, and returns as well the note given to
// the RestoreNoted call whose snapshot a store cut short holds part of
// (nil for Restore's).
func (s *Badger) RestoreNote() (note []byte, cut bool, err error) {
	v, err := s.GetMeta(restoringMeta)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	if len(v) > 1 {
		note = v[1:] // after the mark's first byte
	}
	return note, true, nil
}

// ErrSnapshotRestoredOver is returned by BadgerSnapshot.WriteTo when a
// Restore began after the snapshot was taken: Restore drops the data the
// snapshot's transaction reads, which would then stream as an empty or
// partial store that looks whole.
var ErrSnapshotRestoredOver = errors.New("store: snapshot: the store was restored after the snapshot was taken")

// BadgerSnapshot is a consistent point-in-time view of a Badger store,
// taken by Badger.Snapshot. Writes made after it was taken are not in it.
// A Restore begun after it was taken replaces what it reads: WriteTo then
// fails with ErrSnapshotRestoredOver. Release it when done.
type BadgerSnapshot struct {
	s   *Badger
	txn *badger.Txn
	// restores is the store's count of Restores begun when it was taken.
	restores uint64
	// damaged counts the segments the last WriteTo carried as damaged.
	damaged int
}

// Damaged returns how many segments the last WriteTo carried as damaged
// rather than as they are: segments whose value Badger could not read back
// (bytes its value log lost) or whose count could not be read, which the
// store reads as records with no value (corrupt records to the engine).
// Each is streamed as a damaged segment of as many offsets, so a store
// restored from the snapshot reports the same offsets corrupt. A metadata
// value that cannot be read back fails WriteTo instead: it has no such
// reading.
func (sn *BadgerSnapshot) Damaged() int { return sn.damaged }

// Snapshot pins the store's current state in one read transaction. It
// waits for a Restore running, so the transaction never sees one half
// done.
func (s *Badger) Snapshot() (*BadgerSnapshot, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	s.dropMu.RLock() // Restore holds it for writing throughout
	defer s.dropMu.RUnlock()
	return &BadgerSnapshot{s: s, txn: s.db.NewTransaction(false), restores: s.restores.Load()}, nil
}

// restoredOver returns ErrSnapshotRestoredOver when a Restore began since
// sn was taken.
func (sn *BadgerSnapshot) restoredOver() error {
	if sn.s.restores.Load() != sn.restores {
		return ErrSnapshotRestoredOver
	}
	return nil
}

// Release ends the snapshot's read transaction. It is idempotent.
func (sn *BadgerSnapshot) Release() {
	if sn.txn != nil {
		sn.txn.Discard()
		sn.txn = nil
	}
}

// WriteTo streams the snapshot to w and returns the bytes written. A
// segment it cannot read back is carried as damaged (Damaged). On a store
// a failed write left without a memtable it fails with ErrUnusable.
func (sn *BadgerSnapshot) WriteTo(w io.Writer) (int64, error) {
	if sn.txn == nil {
		return 0, fmt.Errorf("store: snapshot: released")
	}
	if err := sn.s.acquire(); err != nil {
		return 0, err
	}
	defer sn.s.release()
	if err := sn.restoredOver(); err != nil {
		return 0, err
	}
	sn.damaged = 0
	cw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	err := sn.stream(cw)
	if errors.Is(err, ErrUnusable) {
		// A read met Badger's missing memtable (a Write lost it after
		// this call passed acquire): the transaction may count an
		// iterator that was never made, and Badger panics when one
		// is discarded so. It is left to the reopen.
		sn.txn = nil
	}
	return cw.n, err
}

// stream writes the snapshot's frames to cw. Reads that meet Badger's
// missing memtable fail with ErrUnusable (recoverLost) rather than panic.
func (sn *BadgerSnapshot) stream(cw *countingWriter) (err error) {
	defer sn.s.recoverLost(&err)
	if _, err := cw.Write(snapshotMagic); err != nil {
		return err
	}
	it := sn.txn.NewIterator(badger.DefaultIteratorOptions)
	defer it.Close()
	var hdr [2 * binary.MaxVarintLen64]byte
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		key := item.Key()
		if len(key) == 0 || (key[0] != recordSpace && key[0] != metaSpace) {
			continue // sentinels outside the two key spaces
		}
		if key[0] == metaSpace && string(key[1:]) == string(restoringMeta) {
			continue // a store cut short is not copied as if whole
		}
		val, err := valueCopy(item)
		if err != nil {
			if rerr := sn.restoredOver(); rerr != nil {
				return rerr // the value went with the Restore's drop
			}
			if key[0] != recordSpace || !errors.Is(err, ErrDamaged) {
				return fmt.Errorf("store: snapshot: read %x: %w", key, err)
			}
			// A segment Badger cannot read back reads as corrupt records
			// (Read): it is carried as damaged (carriedSegment). Failing
			// would fail every snapshot of this store for good.
			val = nil
		}
		if key[0] == recordSpace {
			if val, err = sn.carriedSegment(key, val); err != nil {
				return fmt.Errorf("store: snapshot: segment %x: %w", key, err)
			}
		}
		n := binary.PutUvarint(hdr[:], uint64(len(key)))
		n += binary.PutUvarint(hdr[n:], uint64(len(val)))
		for _, b := range [][]byte{hdr[:n], key, val} {
			if _, err := cw.Write(b); err != nil {
				return err
			}
		}
	}
	// Every key was read: a Restore begun meanwhile may have dropped some
	// of them, and the stream then ends without its final frame.
	if err := sn.restoredOver(); err != nil {
		return err
	}
	if _, err := cw.Write([]byte{0, 0}); err != nil {
		return err
	}
	return cw.w.(*bufio.Writer).Flush()
}

// carriedSegment returns what WriteTo carries for the segment under key,
// of value v: v, unless its count cannot be read (Badger lost its bytes,
// or damage reached its header), when it is a damaged segment that keeps
// the count of offsets this store gives it (damagedEnd; for a queue's last
// segment, up to the queue's end mark, which snapshots do not carry). A
// store restored from the snapshot then reads those offsets as records
// with no value, and ends the queue, where this one does.
func (sn *BadgerSnapshot) carriedSegment(key, v []byte) ([]byte, error) {
	if _, err := segmentCount(v); err == nil || errors.Is(err, ErrUnsupportedFormat) {
		return v, nil
	}
	q, start := parseRecordKey(key)
	next, err := nextSegment(sn.txn, q, start)
	if err == nil {
		next, err = boundAfter(sn.txn, q, start, v, next)
	}
	if err != nil {
		return nil, err
	}
	sn.damaged++
	return damagedSegment(damagedEnd(start, v, next) - start), nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// maxSnapshotFrame bounds one key or value read from a snapshot, so a
// corrupt length cannot make Restore allocate without limit.
const maxSnapshotFrame = 1 << 30

// Restore replaces everything in the store with the snapshot read from r.
// It loads the keys in batches that stay within Badger's transaction
// limits. Nothing else may use the store meanwhile; the caller ensures it
// (a cluster node restores only while it serves no engine).
func (s *Badger) Restore(r io.Reader) error {
	return s.RestoreNoted(r, nil)
}

// RestoreNoted is Restore, keeping note in the mark of a restore in
// progress, which is on the disk before any of the snapshot: a store it
// leaves cut short gives note back (RestoreNote), across a restart, until
// a Restore runs to its end. A cluster node notes its cluster's ID there.
// After a failed fsync of the store (see Sync) it is refused, the store
// unchanged, with an error matching ErrRestoreRefused; so it is, also
// matching ErrSyncIncomplete, while a held value-log GC round's moved
// values cannot be synced (badger_gcheld.go): a later Restore can succeed. One whose drop or
// load left Badger without a memtable (no file descriptor left for a new
// one's log) fails with ErrUnusable, as a Write would: the store refuses
// every later call but Close until it is opened again.
func (s *Badger) RestoreNoted(r io.Reader, note []byte) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.failedSync(); err != nil {
		// It could not make the snapshot durable before the store
		// dropped what it holds.
		return fmt.Errorf("store: restore: %w (%w)", err, ErrRestoreRefused)
	}
	s.reclaimMu.Lock()
	defer s.reclaimMu.Unlock()
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()

	// Every refusal comes before anything changes, the store's caches
	// included: a refused Restore leaves the queues' ends, and the
	// accounting of what the next Sync must cover, as they were.
	br := bufio.NewReaderSize(r, 1<<20)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != string(snapshotMagic) {
		return fmt.Errorf("%w: missing header (%w)", ErrBadSnapshot, ErrRestoreRefused)
	}
	// A GC round held (badger_gcheld.go) goes only once a sync made the
	// values it moved durable, as for a Sync: let go before a drop that
	// then failed, the store would keep every value but the round's file,
	// their only synced copy. Kept through the drop, its release would have
	// Badger delete the emptied file by its number, which after the drop
	// names a fresh value-log file. So the Restore is refused, the store
	// unchanged, while that sync fails.
	if err := s.releaseHeld(); err != nil {
		return fmt.Errorf("store: restore: sync the values a GC round moved: %w (%w)", err, ErrRestoreRefused)
	}
	clear(s.ends)
	s.beginUncounted() // Badger's own writes
	defer s.endUncounted()
	// Before anything is dropped: snapshots taken before fail (WriteTo).
	s.restores.Add(1)
	if err := s.rotating(s.dropAll); err != nil {
		// Badger's drop sets up a new memtable: when it cannot, it is
		// left without one, as after a failed commit.
		return fmt.Errorf("store: restore: drop: %w", err)
	}
	mark := metaKey(restoringMeta)
	if err := s.rotating(func() error {
		return s.db.Update(func(txn *badger.Txn) error { return txn.Set(mark, append([]byte{1}, note...)) })
	}); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	// On the disk before any of the snapshot: Badger replays each
	// memtable's log on its own, and the OS may write a later log's pages
	// back before an earlier one's.
	if err := s.syncAll(); err != nil {
		return fmt.Errorf("store: restore: sync: %w", err)
	}
	// One commit at a time, each waited for (badger_restoreload.go): with
	// a commit sent behind one whose memtable rotation failed, Badger's
	// commit of it would meet the missing memtable with log.Fatal; here
	// the failed commit is the last, and failedCommit marks the store.
	load := newRestoreLoad(s)
	defer load.cancel()
	// Snapshots hold no end marks (WriteTo copies the record and metadata
	// spaces): the queues' segments loaded into the value log get theirs.
	marks := make(map[QueueID]uint64)
	// What is loaded goes through Badger's memory-mapped logs: the free
	// space is checked before each MiB of it (badger_space.go).
	var pending int64
	for {
		klen, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("%w: key length: %v", ErrBadSnapshot, err)
		}
		vlen, err := binary.ReadUvarint(br)
		if err != nil {
			return fmt.Errorf("%w: value length: %v", ErrBadSnapshot, err)
		}
		if klen == 0 {
			break
		}
		if klen > maxSnapshotFrame || vlen > maxSnapshotFrame {
			return fmt.Errorf("%w: frame of %d+%d bytes", ErrBadSnapshot, klen, vlen)
		}
		buf := make([]byte, klen+vlen)
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("%w: truncated frame: %v", ErrBadSnapshot, err)
		}
		key, val := buf[:klen], buf[klen:]
		if key[0] != recordSpace && key[0] != metaSpace {
			return fmt.Errorf("%w: key %x outside the store's key spaces", ErrBadSnapshot, key)
		}
		if key[0] == recordSpace && len(key) != recordKeyLen {
			// Reads take every key under a queue's prefix for a record
			// key and would misread it, or fail on it, for good.
			return fmt.Errorf("%w: record key %x of %d bytes, want %d", ErrBadSnapshot, key, len(key), recordKeyLen)
		}
		if string(key) == string(mark) {
			return fmt.Errorf("%w: it holds the mark of a restore cut short", ErrBadSnapshot)
		}
		if pending += int64(klen + vlen + 64); pending >= 1<<20 {
			if err := s.space.admit(pending, true); err != nil {
				return fmt.Errorf("store: restore: %w", err)
			}
			pending = 0
		}
		if err := load.set(key, val); err != nil {
			return fmt.Errorf("store: restore: %w", err)
		}
		if key[0] == recordSpace {
			if n, err := segmentCount(val); err == nil && s.needsEndMark(len(val), n) {
				q, start := parseRecordKey(key)
				marks[q] = max(marks[q], start+uint64(n))
			}
		}
	}
	for q, end := range marks {
		if err := load.set(endMarkKey(q), binary.BigEndian.AppendUint64(make([]byte, 0, endMarkLen), end)); err != nil {
			return fmt.Errorf("store: restore: %w", err)
		}
	}
	if err := load.commit(); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	// The snapshot durable first, then the mark's deletion: the load went
	// through memtables set aside since, whose logs Badger's Sync leaves
	// out (syncAll flushes them; beginUncounted made it list them).
	if err := s.syncAll(); err != nil {
		return fmt.Errorf("store: restore: sync: %w", err)
	}
	if err := s.rotating(func() error {
		return s.db.Update(func(txn *badger.Txn) error { return txn.Delete(mark) })
	}); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if err := s.syncAll(); err != nil {
		return fmt.Errorf("store: restore: sync: %w", err)
	}
	return nil
}
