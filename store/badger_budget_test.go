package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func TestBudgetShares(t *testing.T) {
	const mib = 1 << 20
	s := store.BudgetShares(48 * mib)
	require.Equal(t, int64(3*mib), s.MemTableSize, "B/16")
	require.Equal(t, 2, s.NumMemtables)
	require.Equal(t, int64(1792<<10), s.BaseTableSize, "0.6 of a memtable, in 64 KiB steps")
	require.Equal(t, 1, s.TableSizeMultiplier)
	require.Equal(t, int64(6*mib), s.BlockCacheSize, "B/8")
	require.Equal(t, int64(12*mib), s.ValueLogFileSize, "B/4")
	require.Equal(t, time.Second, s.ReleaseMappedEvery)
	require.Equal(t, int64(6*mib), s.ReleaseMappedAbove, "B/8")
	require.True(t, s.FreeOSMemoryWhenIdle)
	require.False(t, s.KeepOSMemoryWhenIdle)
	require.Zero(t, s.IndexCacheSize)
	require.Equal(t, store.CompressionNone, s.Compression)

	// The floor: 1 MiB memtables, 8 MiB value-log files.
	f := store.BudgetShares(store.MinMemoryBudget)
	require.Equal(t, int64(mib), f.MemTableSize)
	require.Equal(t, int64(8*mib), f.ValueLogFileSize)
	require.Equal(t, int64(576<<10), f.BaseTableSize)
	// Large budgets: value-log files stop at 64 MiB.
	l := store.BudgetShares(1 << 30)
	require.Equal(t, int64(64*mib), l.MemTableSize)
	require.Equal(t, int64(64*mib), l.ValueLogFileSize)
	require.Equal(t, int64(128*mib), l.BlockCacheSize)

	// Fields set explicitly win; the rest comes from the budget.
	o, err := store.BadgerOptions{MemTableSize: 8 * mib, BlockCacheSize: -1, ReleaseMappedEvery: time.Minute}.WithBudget(48 * mib)
	require.NoError(t, err)
	require.Equal(t, int64(8*mib), o.MemTableSize)
	require.Equal(t, int64(-1), o.BlockCacheSize)
	require.Equal(t, time.Minute, o.ReleaseMappedEvery)
	require.Equal(t, s.ValueLogFileSize, o.ValueLogFileSize)
	require.Equal(t, s.BaseTableSize, o.BaseTableSize)

	require.True(t, o.FreeOSMemoryWhenIdle, "a budget returns the Go heap when idle")

	// KeepOSMemoryWhenIdle opts out of returning the heap.
	k, err := store.BadgerOptions{KeepOSMemoryWhenIdle: true}.WithBudget(48 * mib)
	require.NoError(t, err)
	require.False(t, k.FreeOSMemoryWhenIdle)
	require.True(t, k.KeepOSMemoryWhenIdle)

	_, err = store.BadgerOptions{}.WithBudget(store.MinMemoryBudget - 1)
	require.ErrorContains(t, err, "below the floor")
	_, err = store.BadgerOptions{}.WithBudget(-1)
	require.Error(t, err)
}

// Every budget from the floor up gives options Badger opens with, and a
// store that reads back what it wrote.
func TestBadgerWithBudgetOpens(t *testing.T) {
	q := store.QueueID{Topic: 1}
	for _, b := range []int64{store.MinMemoryBudget, 48 << 20, 200 << 20} {
		o, err := store.BadgerOptions{}.WithBudget(b)
		require.NoError(t, err)
		s := openBadger(t, t.TempDir(), &o)
		require.Less(t, s.Limits().MaxBytes, int(o.MemTableSize), "batches follow the memtable")
		fill(t, s, q, 0, 3000, 300)
		recs := readAll(t, s, q)
		require.Len(t, recs, 3000, "budget %d", b)
		requireValues(t, q, 300, recs)
	}
}

func TestBadgerOptionsRefuseBadTableShape(t *testing.T) {
	for _, o := range []store.BadgerOptions{
		{BaseTableSize: 1 << 10},
		{TableSizeMultiplier: -1},
		{ReleaseMappedEvery: -time.Second},
		{ReleaseMappedEvery: time.Second, ReleaseMappedAbove: -1},
		{ReleaseMappedEvery: time.Second, FreeOSMemoryWhenIdle: true, KeepOSMemoryWhenIdle: true},
	} {
		_, err := store.OpenBadger(t.TempDir(), &o)
		require.ErrorContains(t, err, "invalid options", "%+v", o)
		require.ErrorIs(t, err, store.ErrInvalidOptions, "%+v", o)
	}
}

// A cache size too large for any host is refused before Badger opens:
// Badger allocates the cache's admission sketch at open, about a
// hundredth of the cache's size, and for such a size it panicked (reported
// as an opaque open error, with the half-opened store's goroutines left
// running) or asked the runtime for more memory than the host has.
func TestBadgerOptionsRefuseHugeCaches(t *testing.T) {
	for _, o := range []store.BadgerOptions{
		{BlockCacheSize: math.MaxInt64},
		{IndexCacheSize: math.MaxInt64},
		{BlockCacheSize: 1 << 62},
	} {
		_, err := store.OpenBadger(t.TempDir(), &o)
		require.ErrorIs(t, err, store.ErrInvalidOptions, "%+v", o)
		require.ErrorContains(t, err, "CacheSize", "%+v", o)
	}
	for _, b := range []int64{math.MaxInt64, 1 << 62} {
		_, err := store.BadgerOptions{}.WithBudget(b)
		require.ErrorIs(t, err, store.ErrInvalidOptions, "budget %d", b)
	}
}

// A budget WithBudget refuses is refused as every other bad option is:
// with an error matching ErrInvalidOptions.
func TestBadgerWithBudget_RefusalMatchesErrInvalidOptions(t *testing.T) {
	for _, b := range []int64{-1, 0, store.MinMemoryBudget - 1} {
		_, err := store.BadgerOptions{}.WithBudget(b)
		require.ErrorIs(t, err, store.ErrInvalidOptions, "budget %d", b)
		require.ErrorContains(t, err, "below the floor", "budget %d", b)
	}
}
