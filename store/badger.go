package store

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dgraph-io/badger/v4"
)

// Badger is a Store kept in a Badger (v4) database.
type Badger struct {
	db       *badger.DB
	dir      string
	inMemory bool
	limits   Limits

	// mu is held for reading by every operation and for writing by Close,
	// so no operation runs on a closed database.
	mu     sync.RWMutex
	closed bool
	// unusable is the error every call but Close returns once a failed
	// write left Badger without a memtable (badger_unusable.go).
	unusable atomic.Pointer[error]
	// closing is set as Close starts, before it waits for the operations
	// running: a Reclaim sees it between its steps and stops, so Close
	// does not wait for the rest of its GC rounds.
	closing atomic.Bool

	// dropMu is held for reading by everything that writes (Write, a
	// DeleteRange chunk) and for writing by Reclaim's memtable flush:
	// Badger's DropPrefix blocks writes and fails those that arrive
	// meanwhile, so they are made to wait instead.
	dropMu sync.RWMutex
	// reclaimMu runs one Reclaim at a time: Badger's Flatten and
	// DropPrefix both stop and restart compactions.
	reclaimMu sync.Mutex
	// writes counts Write calls started and writing those running, so
	// Reclaim can tell a quiet store from a busy one.
	writes  atomic.Uint64
	writing atomic.Int64
	// writersWaiting counts Writes waiting for wmu; a DeleteRange lets
	// them go first between its chunks.
	writersWaiting atomic.Int64
	// chunkSegments is the most segments one DeleteRange transaction
	// deletes (deleteChunkSegments; tests make it small).
	chunkSegments int
	// afterChunk, when set (by tests), runs between two DeleteRange
	// chunks, without any lock, with where the next chunk starts.
	afterChunk func(next uint64)

	// segLimit is the largest segment value that packs several records
	// (BadgerOptions.SegmentBytes).
	segLimit int
	// wmu serializes the changes to records (Write, each chunk of
	// DeleteRange and DropQueue), which read segments to keep them from
	// overlapping, and guards ends. Every commit of the store is made
	// under it (metadata-only Writes too, and Reclaim's value-log GC
	// rounds; Reclaim's memtable flush holds dropMu instead), so a commit
	// that leaves Badger without a memtable
	// is alone in Badger's write batch: it stored nothing, and no other
	// commit reaches Badger before failedCommit marks the store unusable.
	wmu sync.Mutex
	// ends holds, per queue written since open, an upper bound of the end
	// of its records: an append at or past it cannot touch an existing
	// segment. Only a write that committed raises it (settleEnds). A queue
	// not in the map has its end looked up.
	ends map[QueueID]uint64

	// mapped, when set, gives mapped file pages back to the OS
	// (BadgerOptions.ReleaseMappedEvery, badger_release.go).
	mapped *mappedRelease

	// hints let a Read continuing where the last one of its queue stopped
	// skip the lookup of its first segment.
	hints readHints

	// wals flushes the logs of memtables Badger set aside, which its Sync
	// leaves out (badger_walsync.go); nil in memory or read-only.
	wals *walSync
	// valueThreshold is Badger's: a value at least this long is kept in
	// the value log.
	valueThreshold int64
	// vlogMu is held for reading by work that may write to the value
	// log, or to the memtables outside the writes the store counts
	// (walSync.wrote), while it runs: the commit of a Write with a value
	// at the threshold, a value-log GC round, a DeleteRange chunk, a
	// memtable flush, a Restore (beginUncounted). syncLogs' shortcut holds
	// it for writing, so no such work runs during it, and does Badger's
	// Sync instead when it cannot have it at once.
	vlogMu sync.RWMutex
	// vlogGen counts the ends of such work; syncedGen is the count read
	// at the start of the last Badger Sync that succeeded. The shortcut
	// needs syncedGen up to vlogGen: every such work done was covered.
	vlogGen, syncedGen atomic.Uint64
	// syncFailed is the first fsync of the store that failed (noteSync):
	// every later Sync fails with it (failedSync).
	syncFailed atomic.Pointer[error]
	// dbSync is Badger's Sync; tests replace it to see the calls.
	dbSync func() error
	// rotateMu is held for writing by every Badger call of the store that
	// may set the memtable aside and create the next one (a commit, a
	// drop, a value-log GC round) until failedCommit checked its failure,
	// and for reading by Badger's Sync (badgerSync), which dereferences
	// the memtable a failed rotation leaves missing. Syncs that flush the
	// logs themselves (walSync.syncActive) do not take it, so they
	// overlap the next writes.
	rotateMu sync.RWMutex
	// syncGated, when set (by tests), runs when a Badger Sync finds
	// rotateMu held and is about to wait for it.
	syncGated func()
	// runGC is Badger's RunValueLogGC; tests replace it to make rounds
	// that always rewrite something.
	runGC func(discardRatio float64) error
	// gcStarted, when set (by tests), runs once a value-log GC round
	// holds what keeps Syncs beside it Badger's own.
	gcStarted func()
	// dropAll is Badger's DropAll; tests replace it to make it fail.
	dropAll func() error
	// reclaimSync makes the values a value-log GC round moved durable
	// before Badger deletes the file they came from (gcRound); tests
	// watch it.
	reclaimSync func() error
	// held are the GC rounds whose moved values are not yet durable
	// (badger_gcheld.go).
	held heldRounds
	// space refuses writes that would leave the disk nearly full
	// (badger_space.go); nil in memory or read-only.
	space *spaceGuard
	// gcNeed bounds what one value-log GC round writes (gcRound).
	gcNeed int64
	// loadCommit, when set (by tests), commits each transaction of a
	// Restore's load in place of txn.Commit.
	loadCommit func(txn *badger.Txn) error
	// restores counts the Restores begun (each under dropMu): a snapshot
	// taken before one is not written out (BadgerSnapshot.WriteTo).
	restores atomic.Uint64
}

// OpenBadger opens (creating it if needed) the Badger store in dir. Nil opts
// means DefaultBadgerOptions(). A directory another open store holds gives
// an error matching ErrLocked; other failures name the directory.
func OpenBadger(dir string, opts *BadgerOptions) (s *Badger, err error) {
	o := DefaultBadgerOptions()
	if opts != nil {
		o = *opts
	}
	o, err = o.resolve()
	if err != nil {
		return nil, fmt.Errorf("store: open badger at %q: invalid options: %w", dir, err)
	}
	if !o.InMemory {
		if dir == "" {
			return nil, errors.New("store: open badger: no directory given")
		}
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			return nil, fmt.Errorf("store: open badger at %q: not a directory", dir)
		}
	}

	if !o.InMemory && !o.ReadOnly {
		if err := checkOpenSpace(dir, o.MinFreeBytes); err != nil {
			return nil, fmt.Errorf("store: open badger at %q: %w", dir, err)
		}
	}
	// Badger reports some unusable states (corrupt files, for one) by
	// panicking in the calling goroutine; turn those into errors.
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("store: open badger at %q: %v", dir, r)
		}
	}()
	db, err := badger.Open(o.badgerOptions(dir))
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("%w: %s (%v)", ErrLocked, dir, err)
		}
		return nil, fmt.Errorf("store: open badger at %q: %w", dir, err)
	}
	limits := limitsFor(db.MaxBatchSize(), db.MaxBatchCount(), valueCap(o), outOfLine(o))
	s = &Badger{
		db: db, dir: dir, inMemory: o.InMemory, limits: limits,
		segLimit:      int(o.SegmentBytes),
		chunkSegments: deleteChunkSegments,
		ends:          make(map[QueueID]uint64),
	}
	s.dbSync = db.Sync
	s.runGC = db.RunValueLogGC
	s.dropAll = db.DropAll
	s.reclaimSync = s.syncAll
	s.valueThreshold = o.ValueThreshold
	s.vlogGen.Store(1) // not known what the last process left unsynced: Badger's Sync first
	s.gcNeed = o.MemTableSize
	if o.SegmentBytes >= o.ValueThreshold {
		s.gcNeed = o.ValueLogFileSize // segments in the value log: a round may move a file's worth
	}
	if !o.InMemory && !o.ReadOnly {
		s.space = newSpaceGuard(dir, o.MinFreeBytes)
		if s.wals, err = newWALSync(dir, o.MemTableSize); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("store: open badger at %q: %w", dir, err)
		}
	}
	s.startRelease(o)
	return s, nil
}

// isLockError reports whether err is Badger failing to take the directory
// lock. Badger flattens the cause into text, so the text is what is left.
func isLockError(err error) bool {
	return strings.Contains(err.Error(), "Another process is using this Badger database")
}

// acquire takes the read side of mu, or reports ErrClosed.
func (s *Badger) acquire() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if err := s.lostMemtable(); err != nil {
		s.mu.RUnlock()
		return err
	}
	return nil
}

func (s *Badger) release() { s.mu.RUnlock() }

// Limits reports the largest batch Write accepts, derived from Badger's
// transaction limits with margin (see limitsFor).
func (s *Badger) Limits() Limits { return s.limits }

// Close flushes the memtables and closes the database. It is idempotent;
// every other call after Close returns ErrClosed. It waits for the
// operations running, but stops a running Reclaim after its step in
// progress (see Reclaim).
func (s *Badger) Close() error {
	s.closing.Store(true) // before the wait: a Reclaim stops early
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stopRelease()
	if s.wals != nil {
		defer s.wals.close()
	}
	// A GC round's emptied files go once its moved values are synced.
	// When they cannot be, the files stay (badger_gcheld.go): the
	// rounds are left open, and the next open's GC takes them again.
	_ = s.releaseHeld()
	s.held.abandon()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close badger at %q: %w", s.dir, err)
	}
	return nil
}

// RecordsChecked reports that every record Read returns with a value comes
// out of a segment whose CRC-32C, covering every byte of it, matched: a
// reader need not check the record against a checksum of its own again.
// A segment that fails its check yields records without a value (see
// Read).
func (s *Badger) RecordsChecked() bool { return true }

// SegmentBytes returns the most bytes the store packs into one segment
// (BadgerOptions.SegmentBytes as resolved when it opened).
func (s *Badger) SegmentBytes() int64 { return int64(s.segLimit) }
