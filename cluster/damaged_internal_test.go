package cluster

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/crashsim"
	"github.com/equeue-go/equeue/store"
)

// damageStore writes records in segments to a new store in dir's engine
// directory, closes it and cuts its value log, as a machine crash does.
func damageStore(t *testing.T, dir string, bo *store.BadgerOptions) {
	t.Helper()
	st, err := store.OpenBadger(filepath.Join(dir, engineDir), bo)
	require.NoError(t, err)
	var b store.Batch
	for i := range 1600 {
		b.Entries = append(b.Entries, store.Entry{Queue: store.QueueID{Topic: 1, Queue: uint32(i % 4)}, Offset: uint64(i / 4), Value: bytes.Repeat([]byte{byte(i)}, 140)})
	}
	require.NoError(t, st.Write(&b))
	require.NoError(t, st.Close())
	crashsim.CutValueLogTail(t, filepath.Join(dir, engineDir), 100_000, 20_000)
}

// A damaged store moved aside is never removed before the store that
// replaces it opens: when that open fails, the error says where the
// damaged one went, it is still there, and so are the older ones (only
// more than keep are removed). The next open starts from an empty store
// and keeps the one moved aside.
func TestOpenNodeStore_FailedOpenAfterTheMoveKeepsTheDamagedStore(t *testing.T) {
	dir := t.TempDir()
	bo := store.DefaultBadgerOptions()
	bo.SegmentBytes = NodeSegmentBytes
	log := slog.New(slog.DiscardHandler)
	older := filepath.Join(dir, "engine.damaged-1")
	require.NoError(t, os.Mkdir(older, 0o755))
	damageStore(t, dir, &bo)

	refused := errors.New("no new store")
	opens := 0
	failSecond := func(path string, o *store.BadgerOptions) (*store.Badger, error) {
		if opens++; opens == 2 {
			return nil, refused
		}
		return store.OpenBadger(path, o)
	}
	st, openErr := openNodeStoreWith(failSecond, dir, &bo, 2, log)
	require.ErrorIs(t, openErr, refused)
	require.ErrorIs(t, openErr, store.ErrDamaged)
	assert.Nil(t, st)
	aside, err := filepath.Glob(filepath.Join(dir, "engine.damaged-1*"))
	require.NoError(t, err)
	require.Len(t, aside, 2, "the store moved aside and the older one are kept")
	moved := aside[1]
	assert.ErrorContains(t, openErr, moved, "the error says where the damaged store is")

	st, err = openNodeStore(dir, &bo, 1, log)
	require.NoError(t, err)
	require.NoError(t, st.VerifyRecords())
	require.NoError(t, st.Close())
	assert.DirExists(t, moved, "the damaged store is still kept")
	damaged, err := store.OpenBadger(moved, &bo)
	require.NoError(t, err)
	assert.ErrorIs(t, damaged.VerifyRecords(), store.ErrDamaged)
	require.NoError(t, damaged.Close())
}

// Only the names openNodeStore gives are taken for damaged stores.
func TestDamagedAt(t *testing.T) {
	for name, want := range map[string]int64{
		"engine.damaged-1":                   1,
		"engine.damaged-1796533772788063536": 1796533772788063536,
	} {
		got, ok := damagedAt(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"engine.damaged-", "engine.damaged-0", "engine.damaged-01", "engine.damaged-+1", "engine.damaged--1",
		"engine.damaged-1.old", "engine.damaged-1 ", "engine.damaged-99999999999999999999", "raft.damaged-1", "xengine.damaged-1", "engine.damaged-x"} {
		_, ok := damagedAt(name)
		assert.False(t, ok, name)
	}
}

// The move of a damaged store aside is made durable: the node's directory,
// which holds both names, is synced after the rename, and a failed sync is
// reported as a failed rename is, with where the store went.
func TestOpenNodeStore_MoveAsideSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	bo := store.DefaultBadgerOptions()
	bo.SegmentBytes = NodeSegmentBytes
	log := slog.New(slog.DiscardHandler)
	damageStore(t, dir, &bo)

	var synced []string
	refused := errors.New("no directory sync")
	fail := false
	prev := syncDir
	t.Cleanup(func() { syncDir = prev })
	syncDir = func(d string) error {
		aside, err := filepath.Glob(filepath.Join(dir, "engine.damaged-*"))
		require.NoError(t, err)
		assert.Len(t, aside, 1, "synced after the rename")
		synced = append(synced, d)
		if fail {
			return refused
		}
		return nil
	}
	st, err := openNodeStore(dir, &bo, 1, log)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.Equal(t, []string{dir}, synced, "the directory holding the old and new names is synced")

	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	damageStore(t, dir, &bo)
	synced, fail = nil, true
	st, err = openNodeStore(dir, &bo, 1, log)
	require.ErrorIs(t, err, refused)
	require.ErrorIs(t, err, store.ErrDamaged)
	assert.Nil(t, st)
	assert.Equal(t, []string{dir}, synced)
	aside, gerr := filepath.Glob(filepath.Join(dir, "engine.damaged-*"))
	require.NoError(t, gerr)
	require.Len(t, aside, 1)
	assert.ErrorContains(t, err, aside[0], "the error says where the damaged store is")
}

// Syncing a directory works on a real one and fails on one that is not there.
func TestSyncDirectory(t *testing.T) {
	require.NoError(t, syncDirectory(t.TempDir()))
	assert.ErrorIs(t, syncDirectory(filepath.Join(t.TempDir(), "missing")), os.ErrNotExist)
}
