package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/skl"
)

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
	// transaction. Zero means 8 MiB; below 1 MiB is rejected, and so is
	// 2 GiB or more: Badger addresses a memtable and its log file (twice
	// its size) with 32-bit offsets, which would wrap.
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
	// only without compression. At most 1 TiB: Badger allocates the
	// cache's admission counters at open, up to a hundredth of its size.
	BlockCacheSize int64
	// IndexCacheSize is the budget of the cache of table indexes. Badger
	// (v4) consults it only for encrypted tables, which this package never
	// writes; unencrypted indexes stay with their memory-mapped tables
	// whatever this says. Zero or negative means no index cache (the
	// default). At most 1 TiB, as BlockCacheSize.
	IndexCacheSize int64
	// ValueThreshold is the value length from which a value is kept in the
	// value log rather than inline in the LSM tree. Zero means 1 KiB; it
	// must be between 64 bytes and 1 MiB and at most 15% of MemTableSize.
	// In InMemory mode there is no value log: the threshold is raised to
	// the largest value Badger takes in memory and this field is ignored.
	ValueThreshold int64
	// SegmentBytes is the most bytes one segment holds: the single Badger
	// value into which the store packs consecutive records of a queue (a
	// record longer than that gets a segment of its own). Zero means one
	// byte below ValueThreshold, so segments stay inline in the LSM tree:
	// a read takes one seek, a Sync flushes one file, and compaction gives
	// the space of deleted records back. Above ValueThreshold, segments go
	// to the value log: a write then copies its bytes once, instead of into
	// Badger's write-ahead log, a memtable, a level-0 table and every
	// compaction after it, but a Sync flushes two files and deleted records
	// give their space back only through Reclaim (value-log rewriting).
	// That pays where the store is written without a Sync per write, as on
	// the nodes of package cluster, which use 16 KiB. It must be between 64
	// bytes and 1 MiB; in InMemory mode it is ignored (segments take up to
	// the threshold Badger uses in memory).
	SegmentBytes int64
	// ValueLogFileSize is the size at which a value-log file is closed and
	// a new one started; Reclaim rewrites whole files, so smaller files
	// give space back sooner. Zero means 64 MiB; it must be at least 1 MiB
	// and below 2 GiB.
	ValueLogFileSize int64
	// BaseTableSize is the size of an SSTable at the first level below
	// level 0, and the buffer Badger's table builders start from (twice
	// this); a builder grows its buffer by doubling until the table fits,
	// and Badger pools up to 8 builders' buffers, freeing one per 2 s once
	// idle. Zero means 2 MiB; it must be at least 256 KiB.
	BaseTableSize int64
	// TableSizeMultiplier is how much larger an SSTable is on each level
	// below the first non-zero one. Zero means 2 (Badger's default); 1
	// keeps every table at BaseTableSize, which bounds the builders'
	// buffers at the cost of more files.
	TableSizeMultiplier int
	// ReleaseMappedEvery, when positive, makes the store give the pages of
	// its memory-mapped tables and value-log files back to the OS at that
	// interval (Linux, madvise MADV_PAGEOUT; elsewhere it does nothing).
	// Badger writes and reads those files through memory maps, so after
	// a large write or a compaction they count fully in the process's
	// resident set although the OS could drop them; releasing them costs
	// disk reads when the data is read again. Zero means never (the
	// default profile); WithBudget sets 1 s.
	ReleaseMappedEvery time.Duration
	// ReleaseMappedAbove, when positive (with ReleaseMappedEvery), also
	// releases those pages as soon as the process's resident mapped pages
	// (Linux: RssFile plus RssShmem) have grown by this many bytes since
	// the last release, checked every 10 ms while the store is written
	// (until 20 s after the last write) and every 250 ms otherwise;
	// elsewhere than on Linux it does nothing. A compaction writes and
	// reads tens of megabytes of tables in well under a second, so the
	// interval alone lets them pile up under a write burst. Zero means only at ReleaseMappedEvery (the default
	// profile); WithBudget sets an eighth of the budget.
	ReleaseMappedAbove int64
	// FreeOSMemoryWhenIdle, with ReleaseMappedEvery, makes the store call
	// debug.FreeOSMemory once it has had no write for 20 s (once per
	// quiet period). After a large write the Go runtime keeps the heap
	// Badger freed (table builders, flushed memtables) and returns it to
	// the OS only over minutes; this returns it at once. It forces a
	// garbage collection of the whole process: off in the default
	// profile, on under a memory budget (WithBudget) unless
	// KeepOSMemoryWhenIdle is set.
	FreeOSMemoryWhenIdle bool
	// KeepOSMemoryWhenIdle opts out of the FreeOSMemoryWhenIdle that
	// WithBudget sets, for a host that manages its own heap (the forced
	// collection stops the whole process briefly). It cannot be set
	// together with FreeOSMemoryWhenIdle. False by default.
	KeepOSMemoryWhenIdle bool
	// GoMemoryLimit, when positive, makes the store set a soft memory limit
	// for the Go runtime while it is open (debug.SetMemoryLimit): the Go
	// memory the process uses when the store opens plus this many bytes.
	// Under a write burst Badger's table builders make most of the live
	// heap, and with GOGC=100 the heap runs up to twice its live size
	// between collections; the limit makes the collector run before that.
	// The limit is process-wide, so the store sets it only if the process
	// has none (no GOMEMLIMIT in the environment, not even "off", and no
	// debug.SetMemoryLimit of the host's), stores open together add their
	// shares, Close takes the store's share back and the last Close
	// removes the limit; a limit the host sets meanwhile is left alone.
	// Near the limit the collector runs more often (the runtime caps it at
	// about half the CPU), so a host whose own heap grows by much after
	// the store opened opts out. Zero means no limit in the default
	// profile and a budget's share under WithBudget (5/4 of the budget);
	// negative opts out of the budget's; a positive value below 16 MiB is
	// refused.
	GoMemoryLimit int64
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
	// ReadOnly opens an existing directory without changing it: Badger
	// creates and writes no file and takes a shared lock, so several
	// read-only processes may open it while no writer holds it. Writes
	// fail; callers that must not write (the equeue command's read-only
	// commands) refuse them before they reach the store. Not with
	// InMemory.
	ReadOnly bool
	// MinFreeBytes is the free space the store keeps on its file system: a
	// write that would leave less is refused with ErrNoSpace, nothing of
	// it stored, so that a full disk fails writes instead of killing the
	// process (badger_space.go: Badger writes its logs through memory
	// maps of sparse files, where a full disk raises SIGBUS). Writes that
	// only record metadata or delete records (offset commits, retention,
	// topic deletion) may use three quarters of it. Zero means
	// (NumMemtables + 1) x MemTableSize + 4 MiB, room for the flushes of
	// the memtables Badger holds; negative turns the check off. Ignored
	// with InMemory and ReadOnly, and on platforms other than Linux, macOS
	// and FreeBSD, where the free space is not known.
	MinFreeBytes int64
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
//   - 2 MiB base tables, 2x larger on each deeper level (Badger's
//     defaults).
//   - 2 compactors, the least Badger accepts.
//   - Mapped file pages are left to the OS (no ReleaseMappedEvery).
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
		BaseTableSize:           2 * mib,
		TableSizeMultiplier:     2,
		NumCompactors:           2,
		Compression:             CompressionNone,
	}
}

// ErrInvalidOptions is returned (wrapped) by OpenBadger when a field of
// BadgerOptions is out of range or contradicts another.
var ErrInvalidOptions = errors.New("store: invalid Badger options")

// optionsError is a BadgerOptions field that is out of range: its message
// names the field, and it matches ErrInvalidOptions.
type optionsError struct{ msg string }

func (e *optionsError) Error() string        { return e.msg }
func (e *optionsError) Is(target error) bool { return target == ErrInvalidOptions }

// invalidf returns an optionsError.
func invalidf(format string, args ...any) error {
	return &optionsError{msg: fmt.Sprintf(format, args...)}
}

// minGoMemoryLimit is the smallest positive GoMemoryLimit: a limit only a
// few megabytes above what the process uses would keep the collector
// running.
const minGoMemoryLimit = 16 * mib

// Badger's own bounds (badger/v4 options and db.go).
const (
	badgerMaxValueThreshold = 1 * mib
	minValueThreshold       = 64
	minSegmentBytes         = 64
	maxSegmentBytes         = 1 * mib
	badgerMinVlogFileSize   = 1 * mib
	// maxMemTableSize is the largest MemTableSize. Badger maps a
	// memtable's log file at twice the memtable's size and keeps that
	// size, and the offsets into the file and into the memtable's arena
	// (about 1.3x its size), in 32 bits. It holds ValueLogFileSize, whose
	// files are of the same kind, below 2 GiB, but checks no bound of
	// MemTableSize: from 2 GiB the file's size wraps, and from about
	// 3.5 GiB the offsets do, so writes land on earlier ones.
	maxMemTableSize       = 2<<30 - 1
	badgerMaxVlogFileSize = 2<<30 - 1
	minBaseTableSize      = 256 * kib
	// maxCacheSize is the largest BlockCacheSize and IndexCacheSize.
	// Badger sizes a cache's admission counters (a count-min sketch and
	// a Bloom filter, about a hundredth of the cache's size) from it and
	// allocates them at open, checking no bound: far above this the
	// allocation panics inside Badger's Open, which leaves the half-opened
	// store's goroutines running, and well before that it asks for more
	// memory than any host has, which kills the process.
	maxCacheSize = 1 << 40
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
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = int64(o.NumMemtables+1)*o.MemTableSize + 4*mib
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
	if o.BaseTableSize == 0 {
		o.BaseTableSize = d.BaseTableSize
	}
	if o.TableSizeMultiplier == 0 {
		o.TableSizeMultiplier = d.TableSizeMultiplier
	}

	maxBatch, _ := badgerBatchLimits(o.MemTableSize)
	switch {
	case o.MemTableSize < 1*mib || o.MemTableSize > maxMemTableSize:
		return o, invalidf("MemTableSize %d is outside [1 MiB, 2 GiB)", o.MemTableSize)
	case o.NumMemtables < 1:
		return o, invalidf("NumMemtables %d is below 1", o.NumMemtables)
	case o.NumLevelZeroTables < 1:
		return o, invalidf("NumLevelZeroTables %d is below 1", o.NumLevelZeroTables)
	case o.NumLevelZeroTablesStall <= o.NumLevelZeroTables:
		return o, invalidf("NumLevelZeroTablesStall %d must be above NumLevelZeroTables %d",
			o.NumLevelZeroTablesStall, o.NumLevelZeroTables)
	case o.NumCompactors < 2:
		return o, invalidf("NumCompactors %d is below 2, the least Badger accepts", o.NumCompactors)
	case o.ValueLogFileSize < badgerMinVlogFileSize || o.ValueLogFileSize > badgerMaxVlogFileSize:
		return o, invalidf("ValueLogFileSize %d is outside [1 MiB, 2 GiB)", o.ValueLogFileSize)
	case o.BaseTableSize < minBaseTableSize:
		return o, invalidf("BaseTableSize %d is below 256 KiB", o.BaseTableSize)
	case o.TableSizeMultiplier < 1:
		return o, invalidf("TableSizeMultiplier %d is below 1", o.TableSizeMultiplier)
	case o.ReleaseMappedEvery < 0:
		return o, invalidf("negative ReleaseMappedEvery %v", o.ReleaseMappedEvery)
	case o.ReleaseMappedAbove < 0:
		return o, invalidf("negative ReleaseMappedAbove %d", o.ReleaseMappedAbove)
	case o.FreeOSMemoryWhenIdle && o.ReleaseMappedEvery == 0:
		return o, invalidf("FreeOSMemoryWhenIdle needs a positive ReleaseMappedEvery")
	case o.GoMemoryLimit > 0 && o.GoMemoryLimit < minGoMemoryLimit:
		return o, invalidf("GoMemoryLimit %d must be at least 16 MiB (or negative for none)", o.GoMemoryLimit)
	case o.FreeOSMemoryWhenIdle && o.KeepOSMemoryWhenIdle:
		return o, invalidf("FreeOSMemoryWhenIdle and KeepOSMemoryWhenIdle contradict each other")
	case o.Compression > CompressionZSTD:
		return o, invalidf("unknown compression %v", o.Compression)
	case o.Compression != CompressionNone && o.BlockCacheSize == 0:
		return o, invalidf("compression %v needs a block cache", o.Compression)
	case o.ReadOnly && o.InMemory:
		return o, invalidf("ReadOnly needs a directory, not InMemory")
	case o.BlockCacheSize > maxCacheSize:
		return o, invalidf("BlockCacheSize %d is above 1 TiB", o.BlockCacheSize)
	case o.IndexCacheSize > maxCacheSize:
		return o, invalidf("IndexCacheSize %d is above 1 TiB", o.IndexCacheSize)
	}
	if o.InMemory {
		// No value log in memory: every value must fit under the
		// threshold, so raise it as far as Badger allows.
		o.ValueThreshold = min(badgerMaxValueThreshold, maxBatch)
		o.SegmentBytes = o.ValueThreshold - 1
		return o, nil
	}
	if o.ValueThreshold < minValueThreshold || o.ValueThreshold > badgerMaxValueThreshold ||
		o.ValueThreshold > maxBatch {
		return o, invalidf("ValueThreshold %d is outside [%d, %d]", o.ValueThreshold,
			minValueThreshold, min(badgerMaxValueThreshold, maxBatch))
	}
	switch {
	case o.SegmentBytes == 0:
		o.SegmentBytes = o.ValueThreshold - 1
	case o.SegmentBytes < minSegmentBytes || o.SegmentBytes > maxSegmentBytes:
		return o, invalidf("SegmentBytes %d is outside [%d, %d]", o.SegmentBytes, minSegmentBytes, maxSegmentBytes)
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
		// Values in the value log carry a checksum; checking it on each
		// read costs little beside the read, and turns bytes a machine
		// crash lost into an error instead of zeros (VerifyRecords).
		WithVerifyValueChecksum(true).
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
		WithNumCompactors(o.NumCompactors).
		WithBaseTableSize(o.BaseTableSize).
		WithReadOnly(o.ReadOnly)
	bo.TableSizeMultiplier = o.TableSizeMultiplier
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
// share one key, so packing only lowers the charge. An end mark
// (badger_endmark.go), which Badger charges 29 bytes and one operation,
// comes with a segment of two entries at least, which the charge of those
// two covers with the segment.
const opOverhead = 48

// limitsFor turns Badger's transaction limits into Limits with margin:
// half the count Badger allows, and 90% of its byte budget less the
// per-operation overhead of that many operations, capped at valueCap (the
// largest single value Badger takes), so that every batch within Limits
// commits, unless it writes into existing records (see Limits).
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
