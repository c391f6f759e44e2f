package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/skl"
)

// Key layout. Records and metadata live in disjoint key spaces told apart by
// the first byte, so no metadata key, whatever its bytes, can be mistaken for
// a record or collide with one:
//
//	records:  'm' | topic uint32 BE | queue uint32 BE | offset uint64 BE   (17 bytes)
//	metadata: 'x' | caller's key
//
// A record key holds a segment: the records of a run of consecutive
// offsets starting at the key's offset (segment.go).
//
// Record keys have a fixed width, so the 9-byte queue prefix of one queue is
// never a prefix of another queue's keys, and big-endian offsets sort in
// numeric order.
const (
	recordSpace    byte = 'm'
	metaSpace      byte = 'x'
	queuePrefixLen      = 1 + 4 + 4
	recordKeyLen        = queuePrefixLen + 8
)

func appendQueuePrefix(dst []byte, q QueueID) []byte {
	dst = append(dst, recordSpace)
	dst = binary.BigEndian.AppendUint32(dst, q.Topic)
	return binary.BigEndian.AppendUint32(dst, q.Queue)
}

func queuePrefix(q QueueID) []byte {
	return appendQueuePrefix(make([]byte, 0, recordKeyLen), q)
}

func appendRecordKey(dst []byte, q QueueID, off uint64) []byte {
	return binary.BigEndian.AppendUint64(appendQueuePrefix(dst, q), off)
}

func recordKey(q QueueID, off uint64) []byte {
	return appendRecordKey(make([]byte, 0, recordKeyLen), q, off)
}

// recordOffset decodes the offset of a record key found under a queue prefix.
func recordOffset(key []byte) (uint64, error) {
	if len(key) != recordKeyLen {
		return 0, fmt.Errorf("store: corrupt record key %x: length %d, want %d", key, len(key), recordKeyLen)
	}
	return binary.BigEndian.Uint64(key[queuePrefixLen:]), nil
}

func metaKey(k []byte) []byte {
	out := make([]byte, 0, 1+len(k))
	return append(append(out, metaSpace), k...)
}

// Compression selects how Badger compresses SSTable blocks.
type Compression uint8

const (
	// CompressionNone stores blocks as they are. It is the zero value and
	// the default.
	CompressionNone Compression = iota
	// CompressionSnappy compresses blocks with Snappy.
	CompressionSnappy
	// CompressionZSTD compresses blocks with Zstandard at level 1.
	CompressionZSTD
)

// String returns the name of c.
func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionSnappy:
		return "snappy"
	case CompressionZSTD:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// BadgerOptions tunes a Badger store. Every field's zero value means "what
// DefaultBadgerOptions uses", so a partly filled struct is valid:
// &BadgerOptions{InMemory: true} is the default profile kept in memory.
//
// Whatever the options, the store opens Badger with SyncWrites off (the
// engine calls Sync itself), conflict detection off (the engine is the only
// writer) and one version kept per key.
type BadgerOptions struct {
	// MemTableSize is the size of one memtable, the in-memory write buffer
	// that is flushed to a level-0 table when full. It also fixes the
	// largest atomic batch: Badger takes at most 15% of it in one
	// transaction. Zero means 8 MiB; below 1 MiB is rejected.
	MemTableSize int64
	// NumMemtables is how many full memtables may wait to be flushed
	// before writes stall; one more is being filled. Zero means 2.
	NumMemtables int
	// NumLevelZeroTables is how many level-0 tables trigger a compaction
	// into level 1. Zero means 4.
	NumLevelZeroTables int
	// NumLevelZeroTablesStall is how many level-0 tables stall writes until
	// compaction catches up. Zero means 3 x NumLevelZeroTables; it must be
	// above NumLevelZeroTables.
	NumLevelZeroTablesStall int
	// BlockCacheSize is the budget of the cache of SSTable blocks read from
	// disk. Zero means 8 MiB; negative means no cache, which Badger allows
	// only without compression.
	BlockCacheSize int64
	// IndexCacheSize is the budget of the cache of table indexes. Badger
	// (v4) consults it only for encrypted tables, which this package never
	// writes; unencrypted indexes stay with their memory-mapped tables
	// whatever this says. Zero or negative means no index cache (the
	// default).
	IndexCacheSize int64
	// ValueThreshold is the value length from which a value is kept in the
	// value log rather than inline in the LSM tree. Zero means 1 KiB; it
	// must be between 64 bytes and 1 MiB and at most 15% of MemTableSize.
	// In InMemory mode there is no value log: the threshold is raised to
	// the largest value Badger takes in memory and this field is ignored.
	ValueThreshold int64
	// ValueLogFileSize is the size at which a value-log file is closed and
	// a new one started; Reclaim rewrites whole files, so smaller files
	// give space back sooner. Zero means 64 MiB; it must be at least 1 MiB
	// and below 2 GiB.
	ValueLogFileSize int64
	// NumCompactors is how many goroutines compact the LSM tree. Zero
	// means 2, the least Badger accepts.
	NumCompactors int
	// Compression compresses SSTable blocks. The zero value is
	// CompressionNone, the default.
	Compression Compression
	// InMemory keeps everything in memory (Badger's in-memory mode): the
	// directory given to OpenBadger is ignored, nothing is durable, Sync
	// and Reclaim do nothing.
	InMemory bool
	// Logger receives Badger's log lines at Debug, Info, Warn and Error
	// level. Nil means silent.
	Logger *slog.Logger
}

// Sizes used by DefaultBadgerOptions.
const (
	kib = 1 << 10
	mib = 1 << 20
)

// DefaultBadgerOptions returns a profile for an engine embedded in a larger
// program, rather than Badger's own server-sized defaults (64 MiB memtables
// x 5, 256 MiB block cache, 1 GiB value-log files). An idle store stays
// well under 64 MiB of resident memory:
//
//   - 8 MiB memtables, 2 waiting to flush plus the active one: at most
//     ~30 MiB of write buffers under a write burst, one partly used buffer
//     when idle. Batches of up to ~1.2 MiB fit (15% of a memtable).
//   - 4 level-0 tables before compaction, writes stall at 12: short level 0
//     keeps the Bounds and Read seeks cheap.
//   - 8 MiB block cache, no index cache (unused without encryption).
//   - 1 KiB value threshold: typical messages (up to a few hundred bytes)
//     stay inline and are read in one seek and given back by compaction;
//     larger ones go to the value log so compaction does not copy them.
//   - 64 MiB value-log files: Reclaim rewrites whole files, so small files
//     return space soon after retention deletes records.
//   - 2 compactors, the least Badger accepts.
//   - No compression: messages are often already compressed or small, and
//     compression would require the block cache for every read.
func DefaultBadgerOptions() BadgerOptions {
	return BadgerOptions{
		MemTableSize:            8 * mib,
		NumMemtables:            2,
		NumLevelZeroTables:      4,
		NumLevelZeroTablesStall: 12,
		BlockCacheSize:          8 * mib,
		IndexCacheSize:          0,
		ValueThreshold:          1 * kib,
		ValueLogFileSize:        64 * mib,
		NumCompactors:           2,
		Compression:             CompressionNone,
	}
}

// Badger's own bounds (badger/v4 options and db.go).
const (
	badgerMaxValueThreshold = 1 * mib
	minValueThreshold       = 64
	badgerMinVlogFileSize   = 1 * mib
	badgerMaxVlogFileSize   = 2<<30 - 1
)

// resolve replaces zero fields by their defaults and validates the result.
func (o BadgerOptions) resolve() (BadgerOptions, error) {
	d := DefaultBadgerOptions()
	if o.MemTableSize == 0 {
		o.MemTableSize = d.MemTableSize
	}
	if o.NumMemtables == 0 {
		o.NumMemtables = d.NumMemtables
	}
	if o.NumLevelZeroTables == 0 {
		o.NumLevelZeroTables = d.NumLevelZeroTables
	}
	if o.NumLevelZeroTablesStall == 0 {
		o.NumLevelZeroTablesStall = 3 * o.NumLevelZeroTables
	}
	switch {
	case o.BlockCacheSize == 0:
		o.BlockCacheSize = d.BlockCacheSize
	case o.BlockCacheSize < 0:
		o.BlockCacheSize = 0
	}
	if o.IndexCacheSize < 0 {
		o.IndexCacheSize = 0
	}
	if o.ValueThreshold == 0 {
		o.ValueThreshold = d.ValueThreshold
	}
	if o.ValueLogFileSize == 0 {
		o.ValueLogFileSize = d.ValueLogFileSize
	}
	if o.NumCompactors == 0 {
		o.NumCompactors = d.NumCompactors
	}

	maxBatch, _ := badgerBatchLimits(o.MemTableSize)
	switch {
	case o.MemTableSize < 1*mib:
		return o, fmt.Errorf("MemTableSize %d is below 1 MiB", o.MemTableSize)
	case o.NumMemtables < 1:
		return o, fmt.Errorf("NumMemtables %d is below 1", o.NumMemtables)
	case o.NumLevelZeroTables < 1:
		return o, fmt.Errorf("NumLevelZeroTables %d is below 1", o.NumLevelZeroTables)
	case o.NumLevelZeroTablesStall <= o.NumLevelZeroTables:
		return o, fmt.Errorf("NumLevelZeroTablesStall %d must be above NumLevelZeroTables %d",
			o.NumLevelZeroTablesStall, o.NumLevelZeroTables)
	case o.NumCompactors < 2:
		return o, fmt.Errorf("NumCompactors %d is below 2, the least Badger accepts", o.NumCompactors)
	case o.ValueLogFileSize < badgerMinVlogFileSize || o.ValueLogFileSize > badgerMaxVlogFileSize:
		return o, fmt.Errorf("ValueLogFileSize %d is outside [1 MiB, 2 GiB)", o.ValueLogFileSize)
	case o.Compression > CompressionZSTD:
		return o, fmt.Errorf("unknown compression %v", o.Compression)
	case o.Compression != CompressionNone && o.BlockCacheSize == 0:
		return o, fmt.Errorf("compression %v needs a block cache", o.Compression)
	}
	if o.InMemory {
		// No value log in memory: every value must fit under the
		// threshold, so raise it as far as Badger allows.
		o.ValueThreshold = min(badgerMaxValueThreshold, maxBatch)
	} else if o.ValueThreshold < minValueThreshold || o.ValueThreshold > badgerMaxValueThreshold ||
		o.ValueThreshold > maxBatch {
		return o, fmt.Errorf("ValueThreshold %d is outside [%d, %d]", o.ValueThreshold,
			minValueThreshold, min(badgerMaxValueThreshold, maxBatch))
	}
	return o, nil
}

// badgerOptions translates resolved options for badger.Open.
func (o BadgerOptions) badgerOptions(dir string) badger.Options {
	var bo badger.Options
	if o.InMemory {
		bo = badger.DefaultOptions("").WithInMemory(true)
	} else {
		bo = badger.DefaultOptions(dir)
	}
	bo = bo.
		WithSyncWrites(false).
		WithDetectConflicts(false).
		WithNumVersionsToKeep(1).
		WithMetricsEnabled(false).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(o.NumMemtables).
		WithNumLevelZeroTables(o.NumLevelZeroTables).
		WithNumLevelZeroTablesStall(o.NumLevelZeroTablesStall).
		WithBlockCacheSize(o.BlockCacheSize).
		WithIndexCacheSize(o.IndexCacheSize).
		WithValueThreshold(o.ValueThreshold).
		WithValueLogFileSize(o.ValueLogFileSize).
		WithNumCompactors(o.NumCompactors)
	switch o.Compression {
	case CompressionSnappy:
		bo = bo.WithCompression(options.Snappy)
	case CompressionZSTD:
		bo = bo.WithCompression(options.ZSTD).WithZSTDCompressionLevel(1)
	default:
		bo = bo.WithCompression(options.None)
	}
	// Badger tests the interface against nil, so a nil *slogLogger must
	// not be stored in it.
	bo.Logger = nil
	if o.Logger != nil {
		bo.Logger = slogLogger{o.Logger}
	}
	return bo
}

// badgerBatchLimits repeats Badger's derivation of its transaction limits
// from the memtable size (db.go, checkAndSetOptions): 15% of a memtable, and
// that many bytes divided by the size of a full skiplist node.
func badgerBatchLimits(memTableSize int64) (maxBytes, maxCount int64) {
	maxBytes = 15 * memTableSize / 100
	return maxBytes, maxBytes / int64(skl.MaxNodeSize)
}

// opOverhead bounds what Badger charges one operation beyond the bytes
// Batch.Cost counts: up to 17 bytes of our key (record key, or the metadata
// space byte), 2 meta bytes, 10 bytes of version and up to segmentOverhead
// (11) bytes of segment framing, rounded up. A value stored in the value log
// is charged a 12-byte pointer instead of its length, which is less since
// values that long are at least 64 bytes. Records packed into one segment
// share one key, so packing only lowers the charge.
const opOverhead = 48

// limitsFor turns Badger's transaction limits into Limits with margin:
// half the count Badger allows, and 90% of its byte budget less the
// per-operation overhead of that many operations, capped at valueCap (the
// largest single value Badger takes), so that every batch within Limits
// commits.
func limitsFor(maxBytes, maxCount, valueCap, threshold int64) Limits {
	ops := max(maxCount/2, 1)
	budget := max(maxBytes*9/10-ops*opOverhead, 1)
	return Limits{MaxEntries: int(ops), MaxBytes: int(budget), ValueThreshold: int(threshold), MaxValueSize: int(valueCap)}
}

// outOfLine is the value length from which Badger keeps values in its value
// log (0 in memory, where no value log exists).
func outOfLine(o BadgerOptions) int64 {
	if o.InMemory {
		return 0
	}
	return o.ValueThreshold
}

// defaultLimits is what a store opened with DefaultBadgerOptions reports.
func defaultLimits() Limits {
	o, err := DefaultBadgerOptions().resolve()
	if err != nil {
		panic("store: default Badger options are invalid: " + err.Error())
	}
	return optionLimits(o)
}

func optionLimits(o BadgerOptions) Limits {
	size, count := badgerBatchLimits(o.MemTableSize)
	return limitsFor(size, count, valueCap(o), outOfLine(o))
}

// valueCap is the largest single record the Badger store takes with
// resolved options o: the largest value Badger stores (in memory, values
// above the threshold are refused; on disk, values above the value-log
// file size) less the framing of a segment holding the record alone.
func valueCap(o BadgerOptions) int64 {
	if o.InMemory {
		return o.ValueThreshold - segmentOverhead
	}
	return o.ValueLogFileSize - segmentOverhead
}

// slogLogger passes Badger's log lines to a *slog.Logger.
type slogLogger struct{ l *slog.Logger }

func (s slogLogger) log(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	s.l.Log(ctx, level, strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "component", "badger")
}

func (s slogLogger) Errorf(format string, args ...any)   { s.log(slog.LevelError, format, args...) }
func (s slogLogger) Warningf(format string, args ...any) { s.log(slog.LevelWarn, format, args...) }
func (s slogLogger) Infof(format string, args ...any)    { s.log(slog.LevelInfo, format, args...) }
func (s slogLogger) Debugf(format string, args ...any)   { s.log(slog.LevelDebug, format, args...) }

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

	// dropMu is held for reading by everything that writes (Write,
	// DeleteRange, a Reclaim round) and for writing by DropQueue: Badger's
	// DropPrefix blocks writes and fails those that arrive meanwhile, so
	// they are made to wait instead.
	dropMu sync.RWMutex

	// segLimit is the largest segment value that packs several records:
	// one byte below the value threshold, so segments stay in the LSM tree.
	segLimit int
	// wmu serializes the changes to records (Write, DeleteRange, DropQueue),
	// which read segments to keep them from overlapping, and guards ends.
	wmu sync.Mutex
	// ends holds, per queue written since open, an upper bound of the end
	// of its records: an append at or past it cannot touch an existing
	// segment. A queue not in the map has its end looked up.
	ends map[QueueID]uint64
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
	return &Badger{
		db: db, dir: dir, inMemory: o.InMemory, limits: limits,
		segLimit: int(o.ValueThreshold) - 1,
		ends:     make(map[QueueID]uint64),
	}, nil
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
	return nil
}

func (s *Badger) release() { s.mu.RUnlock() }

// Write applies b in one read-write transaction. Records are packed into
// segments (see segment.go): consecutive offsets of one queue share a key.
func (s *Badger) Write(b *Batch) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if b == nil || len(b.Entries)+len(b.Meta) == 0 {
		return nil
	}
	if err := checkBatch(b, s.limits); err != nil {
		return err
	}

	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	if len(b.Entries) > 0 {
		s.wmu.Lock()
		defer s.wmu.Unlock()
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	if err := s.writeRecords(txn, b.Entries); err != nil {
		return writeError(err)
	}
	for i := range b.Meta {
		op := &b.Meta[i]
		var err error
		if op.Delete {
			err = txn.Delete(metaKey(op.Key))
		} else {
			err = txn.SetEntry(badger.NewEntry(metaKey(op.Key), op.Value))
		}
		if err != nil {
			return writeError(err)
		}
	}
	if err := txn.Commit(); err != nil {
		return writeError(err)
	}
	return nil
}

// writeRecords adds entries to txn as segments, queue by queue. An append
// past a queue's known end is packed as it comes; a write into or before
// existing records merges with the segments it overlaps. Call with wmu held.
func (s *Badger) writeRecords(txn *badger.Txn, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	sorted := make([]Entry, len(entries))
	copy(sorted, entries)
	// Stable: of two entries for one offset, the later one wins below.
	slices.SortStableFunc(sorted, func(a, b Entry) int {
		if c := cmp.Compare(a.Queue.Topic, b.Queue.Topic); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Queue.Queue, b.Queue.Queue); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	// Keys and segment values are handed to the transaction, which keeps
	// them until the commit: both buffers are sized up front so they never move.
	keys := make([]byte, 0, len(sorted)*recordKeyLen)
	size := 0
	for i := range sorted {
		size += len(sorted[i].Value) + segmentRecordOverhead + segmentOverhead
	}
	vals := make([]byte, 0, size)
	for i := 0; i < len(sorted); {
		q := sorted[i].Queue
		j := i
		for j < len(sorted) && sorted[j].Queue == q {
			j++
		}
		group := lastWins(sorted[i:j])
		i = j
		end, known := s.ends[q]
		if !known {
			var err error
			if end, err = queueEnd(txn, q); err != nil {
				return err
			}
		}
		lo, hi := group[0].Offset, group[len(group)-1].Offset+1
		if lo < end {
			merged, err := s.takeOverlap(txn, q, lo, hi)
			if err != nil {
				return err
			}
			group = mergeRecords(merged, group)
		}
		var err error
		if keys, vals, err = s.putSegments(txn, q, group, keys, vals); err != nil {
			return err
		}
		s.ends[q] = max(end, hi)
	}
	return nil
}

// lastWins drops all but the last of entries with equal offsets from a
// group sorted stably by offset.
func lastWins(group []Entry) []Entry {
	out := group[:0]
	for i := range group {
		if i+1 < len(group) && group[i+1].Offset == group[i].Offset {
			continue
		}
		out = append(out, group[i])
	}
	return out
}

// mergeRecords merges the records of existing segments with new entries,
// both sorted by offset; a new entry replaces an existing record.
func mergeRecords(old, fresh []Entry) []Entry {
	out := make([]Entry, 0, len(old)+len(fresh))
	i, j := 0, 0
	for i < len(old) || j < len(fresh) {
		switch {
		case j == len(fresh) || (i < len(old) && old[i].Offset < fresh[j].Offset):
			out = append(out, old[i])
			i++
		case i < len(old) && old[i].Offset == fresh[j].Offset:
			i++ // replaced by fresh[j]
		default:
			out = append(out, fresh[j])
			j++
		}
	}
	return out
}

// putSegments packs group (one queue, ascending, distinct offsets) into
// segments of consecutive offsets and sets them in txn. Segment keys and
// values are appended to keys and vals, which must have room for them.
func (s *Badger) putSegments(txn *badger.Txn, q QueueID, group []Entry, keys, vals []byte) ([]byte, []byte, error) {
	recs := make([][]byte, 0, len(group))
	for i := 0; i < len(group); {
		recs = append(recs[:0], group[i].Value)
		// size bounds the encoded segment: header and checksum at their
		// largest, and each record with its length.
		size := 1 + binary.MaxVarintLen32 + 4 + uvarintLen(uint64(len(group[i].Value))) + len(group[i].Value)
		j := i + 1
		for ; j < len(group) && group[j].Offset == group[j-1].Offset+1; j++ {
			n := uvarintLen(uint64(len(group[j].Value))) + len(group[j].Value)
			if size+n > s.segLimit {
				break
			}
			size += n
			recs = append(recs, group[j].Value)
		}
		k0, v0 := len(keys), len(vals)
		keys = appendRecordKey(keys, q, group[i].Offset)
		if len(vals)+size > cap(vals) {
			// Records merged from existing segments need more room: start a
			// new buffer rather than move the values already handed to txn.
			vals = make([]byte, 0, max(size, cap(vals)))
			v0 = 0
		}
		vals = encodeSegment(vals, recs)
		if err := txn.SetEntry(badger.NewEntry(keys[k0:len(keys):len(keys)], vals[v0:len(vals):len(vals)])); err != nil {
			return keys, vals, err
		}
		i = j
	}
	return keys, vals, nil
}

// takeOverlap deletes, in txn, every segment of q holding an offset in
// [lo, hi) and returns all of their records (those outside [lo, hi) too),
// ascending, for the caller to write back.
func (s *Badger) takeOverlap(txn *badger.Txn, q QueueID, lo, hi uint64) ([]Entry, error) {
	var out []Entry
	err := scanSegments(txn, q, lo, hi, func(start uint64, v []byte) error {
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return err
		}
		return decodeSegment(v, func(i int, rec []byte) bool {
			out = append(out, Entry{Queue: q, Offset: start + uint64(i), Value: rec})
			return true
		})
	})
	return out, err
}

// scanSegments calls fn with the first offset and a copy of the value of
// every segment of q that may hold an offset in [lo, hi): the one starting
// at or before lo, if it reaches lo, and those starting in (lo, hi). The
// segments are collected first, so fn may write to txn.
func scanSegments(txn *badger.Txn, q QueueID, lo, hi uint64, fn func(start uint64, v []byte) error) error {
	type seg struct {
		start uint64
		v     []byte
	}
	var segs []seg
	prefix := queuePrefix(q)
	if start, v, ok, err := segmentAtOrBefore(txn, prefix, q, lo); err != nil {
		return err
	} else if ok && start < lo {
		if n, err := segmentCount(v); err != nil || start+uint64(n) > lo {
			segs = append(segs, seg{start, v})
		}
	}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
	for it.Seek(recordKey(q, lo)); it.Valid(); it.Next() {
		start, err := recordOffset(it.Item().Key())
		if err != nil {
			it.Close()
			return err
		}
		if start >= hi {
			break
		}
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			it.Close()
			return err
		}
		segs = append(segs, seg{start, v})
	}
	it.Close()
	for _, sg := range segs {
		if err := fn(sg.start, sg.v); err != nil {
			return err
		}
	}
	return nil
}

// segmentAtOrBefore returns the first offset and a copy of the value of the
// last segment of q starting at or before off.
func segmentAtOrBefore(txn *badger.Txn, prefix []byte, q QueueID, off uint64) (uint64, []byte, bool, error) {
	return lastSegment(txn, prefix, q, off, true)
}

// lastSegment is segmentAtOrBefore; withValue false skips the value copy
// (the value returned is then nil).
func lastSegment(txn *badger.Txn, prefix []byte, q QueueID, off uint64, withValue bool) (uint64, []byte, bool, error) {
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix, Reverse: true})
	defer it.Close()
	it.Seek(recordKey(q, off))
	if !it.Valid() {
		return 0, nil, false, nil
	}
	start, err := recordOffset(it.Item().Key())
	if err != nil || !withValue {
		return start, nil, err == nil, err
	}
	v, err := it.Item().ValueCopy(nil)
	if err != nil {
		return 0, nil, false, err
	}
	return start, v, true, nil
}

// queueEnd returns one past the last offset of q (0 when q is empty). A
// last segment whose count cannot be read is taken to hold one record.
func queueEnd(txn *badger.Txn, q QueueID) (uint64, error) {
	start, v, ok, err := segmentAtOrBefore(txn, queuePrefix(q), q, ^uint64(0))
	if err != nil || !ok {
		return 0, err
	}
	n, err := segmentCount(v)
	if err != nil {
		n = 1
	}
	return start + uint64(n), nil
}

func writeError(err error) error {
	if errors.Is(err, badger.ErrTxnTooBig) {
		return fmt.Errorf("%w: %v", ErrBatchTooLarge, err)
	}
	return fmt.Errorf("store: write: %w", err)
}

// Sync makes every earlier Write durable.
func (s *Badger) Sync() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
}

// Read returns records of q with offsets in [from, to), ascending, bounded
// by max records and maxBytes of values (the record that reaches maxBytes is
// included). It starts at the segment holding from and walks forward; each
// segment's value is copied once and its records are slices of that copy.
// A segment that cannot be decoded yields a record with no value for each
// offset it may hold (up to the next segment), which the engine reports as
// corrupt and skips.
func (s *Badger) Read(q QueueID, from, to uint64, max, maxBytes int) ([]Record, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	if from >= to {
		return nil, nil
	}
	var out []Record
	if max > 0 {
		out = make([]Record, 0, min(max, 256))
	}
	full := func(sum int) bool {
		return (max > 0 && len(out) >= max) || (maxBytes > 0 && sum >= maxBytes)
	}
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := queuePrefix(q)
		seek := from
		if start, _, ok, err := lastSegment(txn, prefix, q, from, false); err != nil {
			return err
		} else if ok {
			seek = start
		}
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		defer it.Close()
		sum := 0
		for it.Seek(recordKey(q, seek)); it.Valid() && !full(sum); {
			start, err := recordOffset(it.Item().Key())
			if err != nil {
				return err
			}
			if start >= to {
				break
			}
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			it.Next()
			derr := decodeSegment(v, func(i int, rec []byte) bool {
				off := start + uint64(i)
				if off < from {
					return true
				}
				if off >= to {
					return false
				}
				if len(rec) == 0 {
					rec = nil // as Badger gives an empty value
				}
				out = append(out, Record{Offset: off, Value: rec})
				sum += len(rec)
				return !full(sum)
			})
			if derr == nil {
				continue
			}
			// Damaged: its offsets run to the next segment, or it is one.
			end := start + 1
			if it.Valid() {
				if next, err := recordOffset(it.Item().Key()); err == nil && next > start {
					end = next
				}
			}
			for off := max64(start, from); off < end && off < to && !full(sum); off++ {
				out = append(out, Record{Offset: off})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read %d/%d: %w", q.Topic, q.Queue, err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// Bounds finds the first offset of q with a forward seek to the queue's
// prefix and the end from the last segment, found with a reverse seek.
func (s *Badger) Bounds(q QueueID) (first, next uint64, ok bool, err error) {
	if err := s.acquire(); err != nil {
		return 0, 0, false, err
	}
	defer s.release()
	prefix := queuePrefix(q)
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: false, Prefix: prefix})
		it.Seek(recordKey(q, 0))
		if !it.Valid() {
			it.Close()
			return nil
		}
		first, err = recordOffset(it.Item().Key())
		it.Close()
		if err != nil {
			return err
		}
		next, err = queueEnd(txn, q)
		ok = err == nil
		return err
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("store: bounds %d/%d: %w", q.Topic, q.Queue, err)
	}
	if !ok {
		return 0, 0, false, nil
	}
	return first, next, true, nil
}

// DeleteRange deletes the records of q with offsets in [from, to): a
// segment inside the range is deleted, one reaching over an end is written
// back with the records outside the range. It works in transactions of at
// most Limits().MaxEntries segments each.
func (s *Badger) DeleteRange(q QueueID, from, to uint64) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	for from < to {
		var done bool
		var err error
		from, done, err = s.deleteChunk(q, from, to)
		if err != nil {
			return fmt.Errorf("store: delete range [%d, %d) of %d/%d: %w", from, to, q.Topic, q.Queue, err)
		}
		if done {
			return nil
		}
	}
	return nil
}

// deleteChunk deletes [from, to) from up to MaxEntries/2 segments of q in
// one transaction and returns where the next chunk starts.
func (s *Badger) deleteChunk(q QueueID, from, to uint64) (uint64, bool, error) {
	s.dropMu.RLock()
	defer s.dropMu.RUnlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	chunk := max(s.limits.MaxEntries/2, 1) // a split segment costs two operations
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	var (
		kept  []Entry
		n     int
		next  = to
		errCh = errors.New("chunk full")
	)
	err := scanSegments(txn, q, from, to, func(start uint64, v []byte) error {
		if n == chunk {
			next = start
			return errCh
		}
		n++
		if err := txn.Delete(recordKey(q, start)); err != nil {
			return err
		}
		return decodeSegment(v, func(i int, rec []byte) bool {
			if off := start + uint64(i); off < from || off >= to {
				kept = append(kept, Entry{Queue: q, Offset: off, Value: rec})
			}
			return true
		})
	})
	if err != nil && err != errCh {
		return from, false, err
	}
	if n == 0 {
		return to, true, nil
	}
	if len(kept) > 0 {
		size := 0
		for _, e := range kept {
			size += len(e.Value) + segmentRecordOverhead + segmentOverhead
		}
		if _, _, err := s.putSegments(txn, q, kept, make([]byte, 0, len(kept)*recordKeyLen), make([]byte, 0, size)); err != nil {
			return from, false, err
		}
	}
	if err := txn.Commit(); err != nil {
		return from, false, err
	}
	return next, next >= to, nil
}

// DropQueue deletes every record of q with Badger's DropPrefix. Writes wait
// until it is done.
func (s *Badger) DropQueue(q QueueID) error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	s.wmu.Lock()
	delete(s.ends, q)
	s.wmu.Unlock()
	if err := s.db.DropPrefix(queuePrefix(q)); err != nil {
		return fmt.Errorf("store: drop queue %d/%d: %w", q.Topic, q.Queue, err)
	}
	return nil
}

// GetMeta returns a copy of the metadata value of key, or ErrNotFound.
func (s *Badger) GetMeta(key []byte) ([]byte, error) {
	if err := s.acquire(); err != nil {
		return nil, err
	}
	defer s.release()
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(metaKey(key))
		if err != nil {
			return err
		}
		v, err = item.ValueCopy(nil)
		return err
	})
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return nil, ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("store: get meta %q: %w", key, err)
	}
	return v, nil
}

// scanChunk is how many metadata pairs ScanMeta copies per transaction.
const scanChunk = 256

// ScanMeta calls fn, in key order, for every metadata key with the prefix.
// Pairs are copied out in chunks and fn runs outside any transaction or
// lock, so it may call back into the store; a scan is therefore not one
// snapshot: keys written during it may or may not be seen.
func (s *Badger) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	type kv struct{ k, v []byte }
	full := metaKey(prefix)
	seek := full
	batch := make([]kv, 0, scanChunk)
	for {
		if err := s.acquire(); err != nil {
			return err
		}
		batch = batch[:0]
		err := s.db.View(func(txn *badger.Txn) error {
			opts := badger.DefaultIteratorOptions
			opts.Prefix = full
			it := txn.NewIterator(opts)
			defer it.Close()
			for it.Seek(seek); it.Valid() && len(batch) < scanChunk; it.Next() {
				item := it.Item()
				v, err := item.ValueCopy(nil)
				if err != nil {
					return err
				}
				batch = append(batch, kv{item.KeyCopy(nil)[1:], v})
			}
			return nil
		})
		s.release()
		if err != nil {
			return fmt.Errorf("store: scan meta %q: %w", prefix, err)
		}
		for _, e := range batch {
			if err := fn(e.k, e.v); err != nil {
				return err
			}
		}
		if len(batch) < scanChunk {
			return nil
		}
		// The smallest key after the last one seen.
		seek = append(metaKey(batch[len(batch)-1].k), 0)
	}
}

// Size returns the bytes the store occupies. On disk that is what the files
// in the directory (LSM tables, value log, write-ahead memtables, manifest)
// take, counted as allocated blocks where the platform says, since Badger
// preallocates its log files sparsely; unlike badger.DB.Size, which is
// refreshed once a minute, it is current. In memory it is the size of the
// LSM tables; memtables not yet flushed are not counted.
func (s *Badger) Size() (int64, error) {
	if err := s.acquire(); err != nil {
		return 0, err
	}
	defer s.release()
	if s.inMemory {
		var n int64
		for _, t := range s.db.Tables() {
			n += int64(t.OnDiskSize)
		}
		return n, nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("store: size of %q: %w", s.dir, err)
	}
	var n int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by compaction or GC meanwhile
		}
		if err != nil {
			return 0, fmt.Errorf("store: size of %q: %w", filepath.Join(s.dir, e.Name()), err)
		}
		n += diskUsage(fi)
	}
	return n, nil
}

// Limits reports the largest batch Write accepts, derived from Badger's
// transaction limits with margin (see limitsFor).
func (s *Badger) Limits() Limits { return s.limits }

// Reclaim runs value-log garbage collection until a round rewrites nothing.
// It does nothing in memory, where there is no value log.
func (s *Badger) Reclaim() error {
	if err := s.acquire(); err != nil {
		return err
	}
	defer s.release()
	if s.inMemory {
		return nil
	}
	// Flush the memtables (Badger flushes them for DropPrefix, so drop a
	// sentinel key written for the purpose), compact every level into one so
	// tombstones and the keys they delete leave the LSM tree, then rewrite
	// value-log files that are mostly garbage.
	if err := s.flushMemtables(); err != nil {
		return fmt.Errorf("store: reclaim: flush: %w", err)
	}
	s.dropMu.RLock()
	err := s.db.Flatten(1)
	s.dropMu.RUnlock()
	if err != nil {
		return fmt.Errorf("store: reclaim: flatten: %w", err)
	}
	for {
		s.dropMu.RLock()
		err := s.db.RunValueLogGC(0.5)
		s.dropMu.RUnlock()
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return nil
		default:
			return fmt.Errorf("store: reclaim: %w", err)
		}
	}
}

// Close flushes the memtables and closes the database. It is idempotent;
// every other call after Close returns ErrClosed.
func (s *Badger) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close badger at %q: %w", s.dir, err)
	}
	return nil
}

// flushSentinel is a key outside the record and metadata spaces, written
// only to make DropPrefix flush the memtables.
var flushSentinel = []byte{0xfe, 'f', 'l', 'u', 's', 'h'}

func (s *Badger) flushMemtables() error {
	s.dropMu.Lock()
	defer s.dropMu.Unlock()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(flushSentinel, nil) }); err != nil {
		return err
	}
	return s.db.DropPrefix(flushSentinel)
}
