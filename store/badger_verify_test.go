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

// Metadata values of ValueThreshold bytes or more live in the value log too.
// One whose bytes a machine crash lost is found whether it was in the last
// value-log file (Badger cuts that file at the damage when it opens, then
// reads nothing back for the value) or in an older one (Badger's value
// checksum, which the store turns on: without it, zeros read back).
func TestBadgerVerifyRecords_FindsLostMetadataBytes(t *testing.T) {
	for _, where := range []string{"last file", "older file"} {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			o := DefaultBadgerOptions()
			o.ValueLogFileSize = 1 << 20
			s, err := OpenBadger(dir, &o)
			require.NoError(t, err)
			big := bytes.Repeat([]byte{0xa5}, 64<<10)
			require.NoError(t, s.Write(&Batch{Meta: []MetaOp{
				{Key: []byte("small"), Value: []byte("inline")},
				{Key: []byte("group/offsets"), Value: big},
			}}))
			if where == "older file" {
				// Large records, each in the value log, until it moves on
				// to a second file.
				for i := range 24 {
					require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: QueueID{Topic: 1}, Offset: uint64(i), Value: big}}}))
				}
			}
			require.NoError(t, s.VerifyRecords())
			require.NoError(t, s.Close())

			files := vlogFiles(t, dir)
			if where == "older file" {
				require.Greater(t, len(files), 1, "the log moved on to another file")
			}
			f, err := os.OpenFile(files[0], os.O_RDWR, 0)
			require.NoError(t, err)
			// Zero part of the large value, which starts near the file's head.
			_, err = f.WriteAt(make([]byte, 4<<10), int64(len(big))/2)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			s, err = OpenBadger(dir, &o)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			err = s.VerifyRecords()
			require.ErrorIs(t, err, ErrDamaged)
			require.ErrorContains(t, err, `metadata key "group/offsets"`)
			_, err = s.GetMeta([]byte("group/offsets"))
			require.ErrorIs(t, err, ErrDamaged, "a read of the damaged value fails: Badger itself answers no bytes and no error")
			err = s.ScanMeta([]byte("group/"), func([]byte, []byte) error { return nil })
			require.ErrorIs(t, err, ErrDamaged)
			require.ErrorContains(t, err, `key "group/offsets"`, "a scan names the damaged key")
			v, err := s.GetMeta([]byte("small"))
			require.NoError(t, err)
			require.Equal(t, []byte("inline"), v)
		})
	}
}
