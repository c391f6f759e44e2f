package store

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A store whose memtable rotation failed (no file descriptor left) has no
// memtable, and Badger's Sync dereferences it. Close lets a held GC round
// go only after such a Sync (releaseHeld): with a round held, the Close
// of a store left so panicked. It keeps the round's files instead, as
// after any sync that fails, and closes.
func TestHuntStore_CloseWithAHeldRoundAfterAFailedRotation(t *testing.T) {
	dir := t.TempDir()
	s, before, _ := heldRoundStore(t, dir)

	loseMemtable(t, s)
	require.True(t, s.held.any(), "the GC round is still held")

	var cerr error
	require.NotPanics(t, func() { cerr = s.Close() }, "Close of a store without a memtable, a round held")
	require.NoError(t, cerr)
	after := vlogFileSet(t, dir)
	for f := range before {
		assert.True(t, after[f], "%s deleted though the values moved out of it were never synced", f)
	}

	s, err := OpenBadger(dir, &heldRoundOpts)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	assert.Len(t, keptRecords(t, s), 400, "kept records after a reopen")
}

// loseMemtable leaves s without a memtable: with no file descriptor left
// to open, it writes until a memtable rotation fails.
func loseMemtable(t *testing.T, s *Badger) {
	t.Helper()
	var limit syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit) })
	// Metadata of small values, kept out of the value log (whose own
	// rotation would fail first): a memtable rotation within a few
	// thousand Writes.
	var werr error
	for i := 0; i < 200_000 && werr == nil; i += 100 {
		b := &Batch{}
		for k := i; k < i+100; k++ {
			b.Meta = append(b.Meta, MetaOp{Key: fmt.Appendf(nil, "fill/%08d", k), Value: make([]byte, 40)})
		}
		// Shut again before each Write: a descriptor that Badger's
		// flushes and compactions closed meanwhile would let the
		// rotation through.
		shutFileLimit(t)
		werr = s.Write(b)
	}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit))
	require.ErrorIs(t, werr, ErrUnusable, "a Write needing a new memtable file fails")
}
