package equeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// A budget becomes the Badger profile of store.BudgetShares; fields set in
// Options.Badger override it, and the caller's struct is left alone.
func TestMemoryBudget_MapsOntoBadgerOptions(t *testing.T) {
	const mib = 1 << 20
	none := (&Options{}).withDefaults()
	require.Nil(t, none.Badger, "no budget: the default profile, as before")

	c := (&Options{MemoryBudget: 48 * mib}).withDefaults()
	require.NotNil(t, c.Badger)
	require.Equal(t, store.BudgetShares(48*mib), *c.Badger)

	mine := &store.BadgerOptions{MemTableSize: 8 * mib, NumCompactors: 3}
	c = (&Options{MemoryBudget: 48 * mib, Badger: mine}).withDefaults()
	require.Equal(t, int64(8*mib), c.Badger.MemTableSize, "explicit field kept")
	require.Equal(t, 3, c.Badger.NumCompactors, "explicit field kept")
	require.Equal(t, int64(6*mib), c.Badger.BlockCacheSize, "budget share")
	require.Equal(t, time.Second, c.Badger.ReleaseMappedEvery, "budget share")
	require.True(t, c.Badger.FreeOSMemoryWhenIdle, "a budget returns the Go heap when idle")

	c = (&Options{MemoryBudget: 48 * mib, Badger: &store.BadgerOptions{KeepOSMemoryWhenIdle: true}}).withDefaults()
	require.False(t, c.Badger.FreeOSMemoryWhenIdle, "the host opted out")
	require.Equal(t, store.BadgerOptions{MemTableSize: 8 * mib, NumCompactors: 3}, *mine, "caller's options not changed")
}
