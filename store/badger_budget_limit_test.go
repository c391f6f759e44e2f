package store_test

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

const mib = 1 << 20

// noHostLimit makes the process look like one whose host set no Go memory
// limit (none set, no GOMEMLIMIT) for the test, and puts back what was
// there after it.
func noHostLimit(t *testing.T) {
	t.Helper()
	was := debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "")
	t.Cleanup(func() { debug.SetMemoryLimit(was) })
}

func goMemoryLimit() int64 { return debug.SetMemoryLimit(-1) }

// goMemoryTotal is all the memory the Go runtime mapped, an upper bound of
// what it counts against its limit.
func goMemoryTotal() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func openWithLimit(t *testing.T, limit int64, releaseEvery time.Duration) *store.Badger {
	t.Helper()
	s, err := store.OpenBadger(t.TempDir(), &store.BadgerOptions{GoMemoryLimit: limit, ReleaseMappedEvery: releaseEvery})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Stores open together share the limit: each adds its share above the Go
// memory in use when the first opened, each Close takes its share back and
// the last one removes the limit.
func TestBadgerGoMemoryLimit_SharedWhileOpen(t *testing.T) {
	noHostLimit(t)
	a := openWithLimit(t, 32*mib, 0)
	first := goMemoryLimit()
	require.Greater(t, first, int64(32*mib), "the Go memory in use plus the share")
	require.LessOrEqual(t, first-32*mib, goMemoryTotal(), "the base is what the runtime holds")

	b := openWithLimit(t, 48*mib, time.Second) // also runs the releasing goroutine
	require.Equal(t, first+48*mib, goMemoryLimit(), "a second store adds its share to the same base")

	require.NoError(t, a.Close())
	require.Equal(t, first+16*mib, goMemoryLimit(), "Close takes the share back")
	require.NoError(t, a.Close())
	require.Equal(t, first+16*mib, goMemoryLimit(), "a second Close takes nothing more")

	require.NoError(t, b.Close())
	require.Equal(t, int64(math.MaxInt64), goMemoryLimit(), "the last Close removes the limit")
}

// A limit of the host's, set before the store opened or while it is open,
// is never touched; nor is GOMEMLIMIT in the environment, even "off".
func TestBadgerGoMemoryLimit_HostLimitLeftAlone(t *testing.T) {
	noHostLimit(t)
	const host = 1 << 40
	debug.SetMemoryLimit(host)
	s := openWithLimit(t, 32*mib, 0)
	require.Equal(t, int64(host), goMemoryLimit())
	require.NoError(t, s.Close())
	require.Equal(t, int64(host), goMemoryLimit())

	debug.SetMemoryLimit(math.MaxInt64)
	s = openWithLimit(t, 32*mib, 0)
	require.NotEqual(t, int64(math.MaxInt64), goMemoryLimit())
	debug.SetMemoryLimit(host) // the host takes over while the store is open
	require.NoError(t, s.Close())
	require.Equal(t, int64(host), goMemoryLimit(), "Close leaves the host's limit")

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "off")
	s = openWithLimit(t, 32*mib, 0)
	require.Equal(t, int64(math.MaxInt64), goMemoryLimit(), "GOMEMLIMIT=off is the host's choice")
	require.NoError(t, s.Close())
}

// Zero (the default profile) and negative values set no limit; a budget
// sets 5/4 of itself unless the field opts out; a positive value below
// 16 MiB is refused with ErrInvalidOptions.
func TestBadgerGoMemoryLimit_Options(t *testing.T) {
	noHostLimit(t)
	for _, v := range []int64{0, -1} {
		s := openWithLimit(t, v, 0)
		require.Equal(t, int64(math.MaxInt64), goMemoryLimit(), "GoMemoryLimit %d", v)
		require.NoError(t, s.Close())
	}
	require.Zero(t, store.DefaultBadgerOptions().GoMemoryLimit)
	require.Equal(t, int64(60*mib), store.BudgetShares(48*mib).GoMemoryLimit)
	o, err := store.BadgerOptions{GoMemoryLimit: -1}.WithBudget(48 * mib)
	require.NoError(t, err)
	require.Equal(t, int64(-1), o.GoMemoryLimit, "an explicit opt-out wins over the budget")

	o, err = store.BadgerOptions{}.WithBudget(48 * mib)
	require.NoError(t, err)
	s, err := store.OpenBadger(t.TempDir(), &o)
	require.NoError(t, err)
	require.NotEqual(t, int64(math.MaxInt64), goMemoryLimit(), "a budget sets a limit")
	require.NoError(t, s.Close())
	require.Equal(t, int64(math.MaxInt64), goMemoryLimit())

	for _, v := range []int64{1, 16*mib - 1} {
		_, err := store.OpenBadger(t.TempDir(), &store.BadgerOptions{GoMemoryLimit: v})
		require.ErrorIs(t, err, store.ErrInvalidOptions, "GoMemoryLimit %d", v)
		require.ErrorContains(t, err, "GoMemoryLimit")
	}
	require.Equal(t, int64(math.MaxInt64), goMemoryLimit(), "a refused store sets nothing")
}
