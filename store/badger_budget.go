package store

// MinMemoryBudget is the smallest memory budget WithBudget accepts (16 MiB):
// below it a memtable would fall under Badger's 1 MiB floor (see
// BudgetShares).
const MinMemoryBudget = 16 * mib

// MaxMemoryBudget is the largest memory budget WithBudget accepts (1 TiB):
// its block cache share is then 128 GiB, well under the largest cache
// OpenBadger accepts (see BadgerOptions.BlockCacheSize). A larger budget is
// a mistake in units more often than a host's memory.
const MaxMemoryBudget = maxCacheSize

// BudgetShares returns the profile WithBudget fills options from for a
// memory budget B (bytes). The shares bound what the store holds in memory;
// they add up to about 60% of B, the rest is left to the Go runtime and to
// the engine's own buffers (its write batch is bounded by the store's
// Limits, about 10% of one memtable, so it follows the memtable share):
//
//   - memtables: B/16 each (at least 1 MiB, below 2 GiB, the most Badger
//     addresses), 2 waiting to flush plus the active one. Badger gives each an arena of about 1.3x its size, so a
//     write burst holds up to ~B/4; an idle store holds one arena.
//   - table builders: base tables of 0.6x a memtable, the same size on
//     every level (TableSizeMultiplier 1), so that a builder's first
//     buffer (twice the base table size, rounded up to a power of two:
//     4 MiB at B = 48 MiB) holds a whole flushed memtable and no builder
//     grows it; Badger pools up to 8 of these buffers and frees one per
//     2 s once idle (8 x 4 MiB = 2/3 B at 48 MiB).
//   - block cache: B/8.
//   - value log: files of B/4, between 8 MiB and 64 MiB. Values from the
//     value threshold up are written to the current file through a
//     memory map.
//   - mapped tables: ReleaseMappedEvery is 1 s and ReleaseMappedAbove
//     B/8, so the pages of memory-mapped tables and value-log files do not
//     pile up in the process's resident set: they are released every
//     second, and at once when they have grown by B/8 (a compaction
//     writes tens of megabytes of tables in well under a second).
//   - Go heap when idle: FreeOSMemoryWhenIdle is on, so 20 s after the
//     last write the heap Badger freed goes back to the OS instead of over
//     minutes. It forces a collection of the whole process;
//     KeepOSMemoryWhenIdle opts out.
//   - Go memory limit: GoMemoryLimit is 5/4 B, so while the store is open
//     and the process has no limit of its own, the Go runtime's soft
//     memory limit is what the process used at open plus 5/4 B.
//
// Index cache and compression stay off, and the level-0 shape (4 tables,
// stall at 12), value threshold and compactor count are the default
// profile's: they cost disk and CPU, not memory.
//
// The shares do not bound the Go heap under a write burst: besides the
// pooled builders, a compaction has up to 8 more tables (plus one per
// split) in flight, each with its buffer and a 3 MiB index builder, so the
// live heap can pass B, and with GOGC=100 the heap grows to twice its live
// size between collections. The memory limit makes the collector run
// before that; it costs CPU when the live heap nears it.
func BudgetShares(budget int64) BadgerOptions {
	o := DefaultBadgerOptions()
	o.MemTableSize = max(min(budget/16, maxMemTableSize)/(64*kib)*(64*kib), 1*mib)
	o.BaseTableSize = max(o.MemTableSize*6/10/(64*kib)*(64*kib), minBaseTableSize)
	o.TableSizeMultiplier = 1
	o.BlockCacheSize = budget / 8
	o.ValueLogFileSize = min(max(budget/4, 8*mib), 64*mib)
	o.ReleaseMappedEvery = defaultReleaseMapped
	o.ReleaseMappedAbove = budget / 8
	o.FreeOSMemoryWhenIdle = true
	o.GoMemoryLimit = budget + budget/4
	return o
}

// WithBudget returns o with every zero field filled from BudgetShares(budget):
// fields set explicitly win over the budget. A budget below
// MinMemoryBudget or above MaxMemoryBudget is refused with an error
// matching ErrInvalidOptions.
// OpenBadger validates the result as any other options (explicit fields
// may disagree with the budget's).
func (o BadgerOptions) WithBudget(budget int64) (BadgerOptions, error) {
	if budget < MinMemoryBudget {
		return o, invalidf("memory budget %d is below the floor of %d (16 MiB)", budget, MinMemoryBudget)
	}
	if budget > MaxMemoryBudget {
		return o, invalidf("memory budget %d is above the ceiling of %d (1 TiB)", budget, int64(MaxMemoryBudget))
	}
	s := BudgetShares(budget)
	fill(&o.MemTableSize, s.MemTableSize)
	fill(&o.NumMemtables, s.NumMemtables)
	fill(&o.NumLevelZeroTables, s.NumLevelZeroTables)
	fill(&o.NumLevelZeroTablesStall, s.NumLevelZeroTablesStall)
	fill(&o.BlockCacheSize, s.BlockCacheSize)
	fill(&o.IndexCacheSize, s.IndexCacheSize)
	fill(&o.ValueThreshold, s.ValueThreshold)
	fill(&o.ValueLogFileSize, s.ValueLogFileSize)
	fill(&o.BaseTableSize, s.BaseTableSize)
	fill(&o.TableSizeMultiplier, s.TableSizeMultiplier)
	fill(&o.NumCompactors, s.NumCompactors)
	fill(&o.ReleaseMappedEvery, s.ReleaseMappedEvery)
	fill(&o.ReleaseMappedAbove, s.ReleaseMappedAbove)
	fill(&o.GoMemoryLimit, s.GoMemoryLimit)
	if !o.KeepOSMemoryWhenIdle {
		o.FreeOSMemoryWhenIdle = true
	}
	return o, nil
}

// fill sets *f to v if *f is zero.
func fill[T comparable](f *T, v T) {
	var zero T
	if *f == zero {
		*f = v
	}
}
