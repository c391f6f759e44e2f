package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Badger keeps the size of a memtable's log file (twice the memtable's)
// and the offsets into it and into the memtable's arena in 32 bits, and
// checks no bound of MemTableSize: from 2 GiB the size wraps, from about
// 3.5 GiB the offsets do and writes land on earlier ones. Such a
// MemTableSize is refused with ErrInvalidOptions, naming the field, before
// Badger allocates anything.
func TestBadgerOptions_RefuseMemtablesBadgerCannotAddress(t *testing.T) {
	for _, size := range []int64{2 << 30, 4 << 30, 64 << 30, 1 << 62} {
		_, err := BadgerOptions{MemTableSize: size}.resolve()
		require.ErrorIs(t, err, ErrInvalidOptions, "MemTableSize %d", size)
		require.ErrorContains(t, err, "MemTableSize", "MemTableSize %d", size)
		_, err = BadgerOptions{MemTableSize: size, InMemory: true}.resolve()
		require.ErrorIs(t, err, ErrInvalidOptions, "in memory, MemTableSize %d", size)
	}
	o, err := BadgerOptions{MemTableSize: 2<<30 - 1}.resolve()
	require.NoError(t, err, "just below 2 GiB")
	require.Less(t, 2*o.MemTableSize, int64(1<<32), "its log file fits 32-bit offsets")
}

// A memory budget of any size gives options that open: the memtable share
// (B/16) stops below what Badger can address, so a host with a large
// budget is not refused, nor given memtables that wrap.
func TestBudgetShares_LargeBudgetsKeepMemtablesAddressable(t *testing.T) {
	for _, b := range []int64{16 << 30, 32 << 30, 64 << 30, 1 << 40} {
		o, err := BadgerOptions{}.WithBudget(b)
		require.NoError(t, err)
		require.Less(t, 2*o.MemTableSize, int64(1<<32), "budget %d", b)
		_, err = o.resolve()
		require.NoError(t, err, "budget %d", b)
	}
}
