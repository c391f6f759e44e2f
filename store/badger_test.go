package store_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func openBadger(t *testing.T, dir string, o *store.BadgerOptions) *store.Badger {
	t.Helper()
	s, err := store.OpenBadger(dir, o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func TestBadgerLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)

	second, err := store.OpenBadger(dir, nil)
	require.ErrorIs(t, err, store.ErrLocked)
	require.Nil(t, second)
	require.Contains(t, err.Error(), dir)
	require.Contains(t, err.Error(), "in use")

	// Released on Close.
	require.NoError(t, first.Close())
	third, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, third.Close())
}

func TestBadgerOpenFailures(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(file, []byte("not a store"), 0o600))
	s, err := store.OpenBadger(file, nil)
	require.Error(t, err)
	require.Nil(t, s)
	require.NotErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), file)
	require.Contains(t, err.Error(), "not a directory")

	// A directory that cannot be created below that file.
	s, err = store.OpenBadger(filepath.Join(file, "sub"), nil)
	require.Error(t, err)
	require.Nil(t, s)
	require.Contains(t, err.Error(), file)

	_, err = store.OpenBadger("", nil)
	require.Error(t, err)

	for name, o := range map[string]store.BadgerOptions{
		"one compactor":     {NumCompactors: 1},
		"tiny memtable":     {MemTableSize: 1000},
		"tiny threshold":    {ValueThreshold: 10},
		"huge threshold":    {ValueThreshold: 2 << 20},
		"huge vlog file":    {ValueLogFileSize: 4 << 30},
		"unknown codec":     {Compression: 9},
		"stall below L0":    {NumLevelZeroTables: 8, NumLevelZeroTablesStall: 4},
		"codec, no cache":   {Compression: store.CompressionSnappy, BlockCacheSize: -1},
		"negative memtable": {NumMemtables: -1},
	} {
		s, err := store.OpenBadger(t.TempDir(), &o)
		require.Error(t, err, name)
		require.Nil(t, s, name)
		require.Contains(t, err.Error(), "invalid options", name)
	}
}

func TestBadgerOptions(t *testing.T) {
	d := store.DefaultBadgerOptions()
	require.Equal(t, int64(8<<20), d.MemTableSize)
	require.Equal(t, store.CompressionNone, d.Compression)
	require.False(t, d.InMemory)
	require.Nil(t, d.Logger)

	// Nil options, zero options and the defaults open the same store; the
	// in-memory store reports the same limits.
	for _, o := range []*store.BadgerOptions{nil, {}, &d} {
		s := openBadger(t, t.TempDir(), o)
		require.Equal(t, store.NewMemory().Limits(), s.Limits())
	}

	// Every knob set, compression on, and the directory ignored in memory.
	q := store.QueueID{Topic: 1}
	for _, c := range []store.Compression{store.CompressionSnappy, store.CompressionZSTD} {
		for _, inMemory := range []bool{false, true} {
			o := store.BadgerOptions{
				MemTableSize: 2 << 20, NumMemtables: 3, NumLevelZeroTables: 2, NumLevelZeroTablesStall: 5,
				BlockCacheSize: 1 << 20, IndexCacheSize: 1 << 20, ValueThreshold: 128,
				ValueLogFileSize: 1 << 20, NumCompactors: 3, Compression: c, InMemory: inMemory,
			}
			s := openBadger(t, t.TempDir(), &o)
			l := s.Limits()
			require.Less(t, l.MaxEntries, store.NewMemory().Limits().MaxEntries, "smaller memtable, smaller batches")
			fill(t, s, q, 0, 3000, 300)
			recs := readAll(t, s, q)
			require.Len(t, recs, 3000, "%v in memory %v", c, inMemory)
			requireValues(t, q, 300, recs)
			require.Equal(t, "snappy", store.CompressionSnappy.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for Badger's goroutines to log into.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestBadgerLogger(t *testing.T) {
	var buf syncBuffer
	o := store.DefaultBadgerOptions()
	o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, &o)
	require.NoError(t, err)
	fill(t, s, store.QueueID{}, 0, 100, 10)
	require.NoError(t, s.Close())
	out := buf.String()
	require.Contains(t, out, "component=badger")
	require.Contains(t, out, "level=INFO")
	require.Contains(t, out, "level=DEBUG")
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		require.NotContains(t, line, `\n"`, "trailing newline kept in %q", line)
	}

	// Above Debug, Badger's debug lines are dropped.
	buf = syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err = store.OpenBadger(dir, &o)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NotContains(t, buf.String(), "level=DEBUG")
	require.NotContains(t, buf.String(), "level=INFO")
}

func TestBadgerDeleteRangeLargeAndReclaim(t *testing.T) {
	t.Parallel()
	// Small value-log files and a low threshold put the values in the
	// value log, so Reclaim has files to consider.
	o := store.BadgerOptions{ValueThreshold: 64, ValueLogFileSize: 1 << 20}
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	q, other := store.QueueID{Topic: 3, Queue: 1}, store.QueueID{Topic: 3, Queue: 2}
	const n = 100_000
	fill(t, s, q, 0, n, 100)
	fill(t, s, other, 0, 10, 100)
	require.NoError(t, s.Sync())
	require.Equal(t, bounds{0, n, true}, getBounds(t, s, q))

	require.NoError(t, s.DeleteRange(q, 0, n-10))
	require.Equal(t, bounds{n - 10, n, true}, getBounds(t, s, q))
	require.NoError(t, s.Reclaim())
	require.Equal(t, bounds{n - 10, n, true}, getBounds(t, s, q))
	recs := readAll(t, s, q)
	require.Equal(t, span(n-10, n), offsets(recs))
	requireValues(t, q, 100, recs)
	require.Equal(t, bounds{0, 10, true}, getBounds(t, s, other))

	require.NoError(t, s.DeleteRange(q, 0, n))
	require.NoError(t, s.Reclaim())
	require.Equal(t, bounds{}, getBounds(t, s, q))

	// The deletions are durable.
	require.NoError(t, s.Close())
	s, err = store.OpenBadger(dir, &o)
	require.NoError(t, err)
	require.Equal(t, bounds{}, getBounds(t, s, q))
	require.Equal(t, bounds{0, 10, true}, getBounds(t, s, other))
	require.NoError(t, s.Reclaim())
}

func TestBadgerSizeGrows(t *testing.T) {
	dir := t.TempDir()
	s, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	empty, err := s.Size()
	require.NoError(t, err)

	q := store.QueueID{Topic: 1}
	fill(t, s, q, 0, 2000, 100)     // inline in the LSM tree
	fill(t, s, q, 2000, 3000, 4000) // in the value log
	require.NoError(t, s.Sync())
	written, err := s.Size()
	require.NoError(t, err)
	require.Greater(t, written, empty+4000*1000)

	require.NoError(t, s.Close())
	s, err = store.OpenBadger(dir, nil)
	require.NoError(t, err)
	reopened, err := s.Size()
	require.NoError(t, err)
	require.Greater(t, reopened, empty+4000*1000)
	require.NoError(t, s.Close())
}
