package store_test

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// dirState is every file of dir with its size, modification time and hash.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = fmt.Sprintf("%d %v %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(b))
	}
	return out
}

// A read-only open reads what was written and leaves every file of the
// directory as it was; two read-only opens may hold it at once.
func TestBadgerReadOnlyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	q := store.QueueID{Topic: 1, Queue: 0}
	w, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, w.Write(&store.Batch{
		Entries: []store.Entry{{Queue: q, Offset: 0, Value: []byte("a")}, {Queue: q, Offset: 1, Value: []byte("b")}},
		Meta:    []store.MetaOp{{Key: []byte("k"), Value: []byte("v")}},
	}))
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	before := dirState(t, dir)

	ro := store.DefaultBadgerOptions()
	ro.ReadOnly = true
	r1, err := store.OpenBadger(dir, &ro)
	require.NoError(t, err)
	r2, err := store.OpenBadger(dir, &ro)
	require.NoError(t, err, "a second read-only open")
	recs, err := r1.Read(q, 0, 2, 10, 1<<20)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, []byte("b"), recs[1].Value)
	v, err := r2.GetMeta([]byte("k"))
	require.NoError(t, err)
	assert.Equal(t, []byte("v"), v)
	require.NoError(t, r1.Close())
	require.NoError(t, r2.Close())

	assert.Equal(t, before, dirState(t, dir), "a read-only open changed the directory")
}

func TestBadgerReadOnlyRefusals(t *testing.T) {
	ro := store.DefaultBadgerOptions()
	ro.ReadOnly = true
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := store.OpenBadger(missing, &ro)
	assert.Error(t, err, "nothing to open read-only")
	assert.NoDirExists(t, missing, "a read-only open created the directory")

	dir := t.TempDir()
	w, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	_, err = store.OpenBadger(dir, &ro)
	assert.ErrorIs(t, err, store.ErrLocked, "read-only while a writer holds the directory")
	require.NoError(t, w.Close())

	ro.InMemory = true
	_, err = store.OpenBadger("", &ro)
	assert.Error(t, err, "read-only in memory")
}
