package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node first started with a secret and no salt records that it runs
// unsalted; a later start with a salt (a mistyped flag, or one meant for
// another cluster) is refused, a usage error naming what to do, rather
// than prove another key and be refused by every unsalted peer. Without
// the flag it starts as before. Before, nothing was recorded and the
// salted start went ahead.
func TestCluster_UnsaltedNodeRefusesASalt(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	n := startClusterNode(t, base, "n1", true, "--cluster-secret-file", secretFile)
	leads := func() bool {
		s, ok := n.status(t)
		return ok && s.Serving
	}
	eventually(t, 60*time.Second, "n1 leads", leads)
	require.Equal(t, 0, n.srv.stop(t))

	restart := func(extra ...string) *server {
		return startServe(t, append([]string{"--dir", n.dir, "--listen", n.listen, "--cluster-id", n.id,
			"--cluster-raft", n.raft, "--cluster-admin", n.admin, "--cluster-secret-file", secretFile}, extra...)...)
	}
	salted := restart("--cluster-salt", "orders-eu")
	assert.Equal(t, exitUsage, waitExit(t, salted), "%s", salted.stderr)
	out := salted.stderr.String()
	assert.Contains(t, out, "--cluster-salt", "%s", out)
	assert.Contains(t, out, "without a cluster salt", "%s", out)
	assert.Contains(t, out, filepath.Join(n.dir, saltFile), "it names the file to remove: %s", out)
	assert.Contains(t, out, "every node", "it says the cluster's salt changes on every node: %s", out)

	n.srv = restart()
	eventually(t, 60*time.Second, "n1 leads again without a salt", leads)
	require.Equal(t, 0, n.srv.stop(t))

	// A directory without the file (an older equeue's) takes a salt, as
	// it did.
	require.NoError(t, os.Remove(filepath.Join(n.dir, saltFile)))
	n.srv = restart("--cluster-salt", "orders-eu")
	eventually(t, 60*time.Second, "n1 leads with a salt", leads)
	require.Equal(t, 0, n.srv.stop(t))
}

// The record of a node without a salt is told from a salt, and one of a
// later version is refused rather than taken for a salt.
func TestKeptSalt_NoSaltRecord(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, storeSalt(dir, nil))
	salt, store, err := keptSalt(dir, nil, false)
	require.NoError(t, err)
	assert.Empty(t, salt, "the node runs unsalted")
	assert.Equal(t, saltKept, store)
	_, _, err = keptSalt(dir, []byte("orders-eu"), true)
	var ce *cliError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, exitUsage, ce.code)

	require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte{0, 9}, 0o600))
	_, _, err = keptSalt(dir, nil, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version 9")
}
