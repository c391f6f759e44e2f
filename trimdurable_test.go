package equeue_test

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// copyOnSyncStore copies the store's directory once, after the first Sync
// that succeeds once armed. The copy reads the page cache, so it holds
// every write made until then, synced or not: it is what a power loss
// right after that Sync leaves only when nothing was written unsynced
// before it, which the test checks of what it relies on (the trim).
// Sync runs on the engine's goroutine, so the copy's error is kept for
// the test to check, not failed there.
type copyOnSyncStore struct {
	equeue.Store
	dir, to string
	armed   atomic.Bool
	copied  atomic.Bool
	copyErr error // set before copied
}

func (s *copyOnSyncStore) Sync() error {
	err := s.Store.Sync()
	if err == nil && s.armed.CompareAndSwap(true, false) {
		s.copyErr = copyFlatDir(s.dir, s.to)
		s.copied.Store(true)
	}
	return err
}

// copyFlatDir copies the regular files of from into to.
func copyFlatDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies the file from to a new file to.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		return err
	}
	return dst.Close()
}

// storedWatermarks counts the low watermarks of the Badger store in dir.
func storedWatermarks(t *testing.T, dir string, bo *store.BadgerOptions) int {
	t.Helper()
	st, err := store.OpenBadger(dir, bo)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	n, err := equeue.StoredWatermarks(st)
	require.NoError(t, err)
	return n
}

// A drop-oldest trim that follows a durable (SyncAlways) send on an engine
// whose default is SyncNever is not fsynced with it. A power loss right
// after the send's fsync loses the trim (its low watermark and deletes) and
// keeps the send; Open trims the topic back to its limit before it returns
// (trimAtOpen), from the same stored messages, so the message the engine
// reported dropped is dropped again and no reader of the reopened engine
// gets it.
func TestTopicLimits_DropOldestAfterADurableSendSurvivesAPowerLoss(t *testing.T) {
	ctx := ctxT(t)
	dir, crashed := t.TempDir(), t.TempDir()
	bo := store.DefaultBadgerOptions()
	bo.MemTableSize, bo.ValueLogFileSize = 1<<20, 1<<20 // small files to copy
	st, err := store.OpenBadger(dir, &bo)
	require.NoError(t, err)
	cs := &copyOnSyncStore{Store: st, dir: dir, to: crashed}
	e, err := equeue.Open("", &equeue.Options{Store: cs, Sync: equeue.SyncNever})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = e.Close()
		}
	})
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: 3, Overflow: equeue.OverflowDropOldest}}))
	lazy := newProducer(t, e, nil)
	for _, id := range []string{"a1", "a2", "a3"} {
		_, err := lazy.Send(ctx, &equeue.Message{Topic: "t", ID: id, Body: []byte(id)})
		require.NoError(t, err)
	}
	durable := newProducer(t, e, &equeue.ProducerOptions{Sync: &equeue.SyncAlways})
	cs.armed.Store(true)
	_, err = durable.Send(ctx, &equeue.Message{Topic: "t", ID: "d1", Body: []byte("d1")})
	require.NoError(t, err)
	require.True(t, cs.copied.Load(), "the durable send fsynced")
	require.NoError(t, cs.copyErr, "copying the directory at the fsync")

	want := map[string][]crashPos{"a2": {{0, 1}}, "a3": {{0, 2}}, "d1": {{0, 3}}}
	require.Equal(t, want, crashReadTopic(t, ctx, e, "t"), "the send trimmed a1 before it returned")
	info, err := e.QueueInfo(ctx, "t", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), info.MinOffset, "a1 reported dropped")
	require.NoError(t, lazy.Close())
	require.NoError(t, durable.Close())
	require.NoError(t, e.Close())
	closed = true

	// The trim stored a1's queue's watermark, and the copy lacks it: its
	// write came after the fsync.
	assert.Equal(t, 1, storedWatermarks(t, dir, &bo), "the trim stored a watermark")
	require.Equal(t, 0, storedWatermarks(t, crashed, &bo), "the power loss lost the trim")
	st2, err := store.OpenBadger(crashed, &bo)
	require.NoError(t, err)
	e2, err := equeue.Open("", &equeue.Options{Store: st2, Sync: equeue.SyncNever})
	require.NoError(t, err)
	defer func() { assert.NoError(t, e2.Close()) }()
	info, err = e2.QueueInfo(ctx, "t", 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.MinOffset, "a1 stays dropped after the power loss")
	assert.Equal(t, want, crashReadTopic(t, ctx, e2, "t"))
}
