package cluster_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A directory keeps the Raft log store it was created with: opening it with
// the other is refused and changes nothing; an unknown store is refused.
func TestOpen_LogStoreKindIsKept(t *testing.T) {
	for _, tc := range []struct{ made, other string }{
		{cluster.LogStoreBolt, cluster.LogStoreWAL},
		{cluster.LogStoreWAL, cluster.LogStoreBolt},
	} {
		t.Run(tc.made, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "n1")
			o := nodeOptions("n1", "127.0.0.1:0")
			o.Bootstrap, o.LogStore = true, tc.made
			n, err := cluster.Open(dir, o)
			require.NoError(t, err)
			require.NoError(t, n.Close())

			o.LogStore = tc.other
			_, err = cluster.Open(dir, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "other Raft log store")

			o.LogStore = tc.made
			n, err = cluster.Open(dir, o)
			require.NoError(t, err, "the directory opens with its own log store")
			require.NoError(t, n.Close())
		})
	}
	o := nodeOptions("n1", "127.0.0.1:0")
	o.LogStore = "rocks"
	_, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), o)
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

// An empty LogStore opens a new directory with raft-wal, and a directory
// created with either log store with that one.
func TestOpen_DefaultLogStore(t *testing.T) {
	open := func(dir, kind string) {
		t.Helper()
		o := nodeOptions("n1", "127.0.0.1:0")
		o.Bootstrap, o.LogStore = true, kind
		n, err := cluster.Open(dir, o)
		require.NoError(t, err)
		require.NoError(t, n.Close())
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	fresh := filepath.Join(t.TempDir(), "n1")
	open(fresh, "")
	assert.True(t, exists(filepath.Join(fresh, "raft", "wal")), "a new directory gets raft-wal")
	assert.False(t, exists(filepath.Join(fresh, "raft", "raft.db")))
	open(fresh, "")
	open(fresh, cluster.LogStoreWAL)

	old := filepath.Join(t.TempDir(), "n1")
	open(old, cluster.LogStoreBolt)
	open(old, "")
	assert.True(t, exists(filepath.Join(old, "raft", "raft.db")))
	assert.False(t, exists(filepath.Join(old, "raft", "wal")), "a bolt directory stays bolt")
}
