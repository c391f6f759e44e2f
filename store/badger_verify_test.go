package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// vlogFiles lists the value-log files of a store directory.
func vlogFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	return files
}

// A machine crash may keep a segment's key while losing its bytes in the
// value log; VerifyRecords finds it, whether the bytes read back as zeros
// (pages never written) or are gone (the log cut short).
func TestBadgerVerifyRecords_FindsLostValueLogBytes(t *testing.T) {
	for _, damage := range []string{"zeroed", "cut"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			o := DefaultBadgerOptions()
			o.SegmentBytes = 16 << 10
			s, err := OpenBadger(dir, &o)
			require.NoError(t, err)
			var b Batch
			for i := range 1600 {
				b.Entries = append(b.Entries, Entry{Queue: QueueID{Topic: 1, Queue: uint32(i % 4)}, Offset: uint64(i / 4), Value: bytes.Repeat([]byte{byte(i)}, 140)})
			}
			require.NoError(t, s.Write(&b))
			require.NoError(t, s.VerifyRecords())
			require.NoError(t, s.Close())

			files := vlogFiles(t, dir)
			require.NotEmpty(t, files)
			f, err := os.OpenFile(files[0], os.O_RDWR, 0)
			require.NoError(t, err)
			fi, err := f.Stat()
			require.NoError(t, err)
			require.Greater(t, fi.Size(), int64(200_000), "the segments are in the value log")
			if damage == "zeroed" {
				_, err = f.WriteAt(make([]byte, 8<<10), fi.Size()/2)
			} else {
				err = f.Truncate(fi.Size() - 20_000)
			}
			require.NoError(t, err)
			require.NoError(t, f.Close())

			s, err = OpenBadger(dir, &o)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			err = s.VerifyRecords()
			require.ErrorIs(t, err, ErrDamaged)
			require.ErrorContains(t, err, "segment of queue 1/")
		})
	}
}

// Inline segments and records written through the store's own path are
// sound after a reopen, and an empty store has nothing to verify.
func TestBadgerVerifyRecords_SoundStore(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, s.VerifyRecords())
	q := QueueID{Topic: 2, Queue: 1}
	var b Batch
	for i := range 3010 {
		size := 100
		if i >= 3000 {
			size = 4000 // records of their own, in the value log
		}
		b.Entries = append(b.Entries, Entry{Queue: q, Offset: uint64(i), Value: bytes.Repeat([]byte{byte(i)}, size)})
	}
	require.NoError(t, s.Write(&b))
	require.NoError(t, s.DeleteRange(q, 0, 1500))
	require.NoError(t, s.Close())
	s, err = OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.VerifyRecords())
}
