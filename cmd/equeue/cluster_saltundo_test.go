package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A start refused before the node wrote anything leaves a directory
// that existed empty (made by hand, a container's volume) empty: the
// salt, or the record of none, that serve kept there first goes with
// the refusal, so that the next start, its flags corrected, is not held
// to a salt of a node that never opened, and a plain serve still takes
// the directory. Before, only a directory serve created went: the
// corrected start was refused as another salt.
func TestCluster_RefusedStartLeavesAnEmptyDirectoryEmpty(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	for _, salt := range [][]string{{"--cluster-salt", "orders-ue"}, nil} {
		dir := filepath.Join(base, "n1")
		require.NoError(t, os.RemoveAll(dir))
		require.NoError(t, os.Mkdir(dir, 0o755))
		args := append([]string{"--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
			"--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-log-store", "bogus"}, salt...)
		srv := startServe(t, args...)
		assert.Equal(t, exitUsage, waitExit(t, srv), "%s", srv.stderr)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err, "the directory that existed is kept")
		assert.Empty(t, entries, "a refused start leaves it as it found it (%v): %s", salt, srv.stderr)
	}
}

// A start refused in a directory it created, with parents it created
// too, leaves none of them, as before the salt was kept first.
func TestCluster_RefusedStartLeavesNoParentDirectory(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	dir := filepath.Join(base, "nodes", "eu", "n1")
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
		"--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-salt", "orders-eu", "--cluster-log-store", "bogus")
	assert.Equal(t, exitUsage, waitExit(t, srv), "%s", srv.stderr)
	assert.NoDirExists(t, filepath.Join(base, "nodes"), "a refused node leaves no directory: %s", srv.stderr)
}

// Two first starts of a node on one directory, at once, both read no
// salt there (keptSalt); the one that keeps its salt first is the one
// whose salt the directory holds: the other is refused rather than
// replace it, and its failure (the node's store is the first's) leaves
// the first's file. Before, the second replaced it, and the node that
// ran with the first salt restarted with the second, refused by its
// peers.
func TestKeepSaltFirst_DoesNotReplaceASaltKeptMeanwhile(t *testing.T) {
	dir := t.TempDir()
	_, store, err := keptSalt(dir, []byte("orders-ue"), true)
	require.NoError(t, err)
	require.Equal(t, saltFirst, store, "nothing kept yet")
	_, err = keepSaltFirst(dir, []byte("orders-eu")) // the other start
	require.NoError(t, err)

	undo, err := keepSaltFirst(dir, []byte("orders-ue"))
	require.ErrorIs(t, err, errSaltKeptMeanwhile)
	assert.Nil(t, undo)
	kept, _, rerr := keptSalt(dir, nil, false)
	require.NoError(t, rerr)
	assert.Equal(t, "orders-eu", string(kept), "the first start's salt stays")
}
