package store

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vlogFileSet lists the value-log files in dir.
func vlogFileSet(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	files := map[string]bool{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".vlog") {
			files[e.Name()] = true
		}
	}
	return files
}

// Value-log GC copies the live values of a file elsewhere without a sync
// and then deletes the file. Reclaim syncs the copies first: when its sync
// runs, every value-log file there was before the round is still on disk,
// and the rewritten ones go only after it. A failed sync fails Reclaim.
func TestBadgerReclaim_SyncsMovedValuesBeforeTheirFileGoes(t *testing.T) {
	// Records of 100 bytes past a threshold of 64 go to the value log, in
	// files of 1 MiB.
	o := BadgerOptions{ValueThreshold: 64, ValueLogFileSize: 1 << 20}
	dir := t.TempDir()
	s, err := OpenBadger(dir, &o)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	q, kept := QueueID{Topic: 3, Queue: 1}, QueueID{Topic: 3, Queue: 2}
	value := make([]byte, 100)
	write := func(queue QueueID, from, to uint64) {
		for off := from; off < to; off += 1000 {
			b := &Batch{}
			for o := off; o < min(off+1000, to); o++ {
				b.Entries = append(b.Entries, Entry{Queue: queue, Offset: o, Value: value})
			}
			require.NoError(t, s.Write(b))
		}
	}
	// The kept records share the first files with records deleted below,
	// so GC moves them.
	for i := range uint64(40) {
		write(kept, i*10, i*10+10)
		write(q, i*1000, i*1000+1000)
	}
	require.NoError(t, s.Sync())
	before := vlogFileSet(t, dir)
	require.Greater(t, len(before), 2)
	require.NoError(t, s.DeleteRange(q, 0, 40_000))

	var atSync []map[string]bool
	s.reclaimSync = func() error {
		atSync = append(atSync, vlogFileSet(t, dir))
		return s.syncLogs()
	}
	require.NoError(t, s.Reclaim())
	after := vlogFileSet(t, dir)
	var gone []string
	for f := range before {
		if !after[f] {
			gone = append(gone, f)
		}
	}
	require.NotEmpty(t, gone, "GC rewrote no file")
	require.NotEmpty(t, atSync, "Reclaim did not sync")
	for f := range before {
		assert.True(t, atSync[0][f], "%s deleted before the values moved out of it were synced", f)
	}
	recs, err := s.Read(kept, 0, 1000, 1000, 0)
	require.NoError(t, err)
	assert.Len(t, recs, 400, "kept records after GC")

	// A failed sync of the moved values fails Reclaim.
	write(q, 40_000, 80_000)
	require.NoError(t, s.Sync())
	require.NoError(t, s.DeleteRange(q, 40_000, 80_000))
	boom := errors.New("disk gone")
	s.reclaimSync = func() error { return boom }
	require.ErrorIs(t, s.Reclaim(), boom)
}
