package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// saltTempLeftovers are files a crash of storeSalt before its rename
// leaves: the temporary file's names (saltFile+".tmp" and digits), with
// the part of a salt written before the crash.
var saltTempLeftovers = []string{saltFile + ".tmp1234567", saltFile + ".tmp42"}

// writeLeftovers creates names in dir as files holding part of a salt.
func writeLeftovers(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("ord"), 0o600))
	}
}

// A crash of a first start between the write of the salt's temporary
// file and its rename leaves that file in the node's directory. The next
// start removes it, and only what bears its naming, and keeps the salt
// it is started with as in a directory without it. Before, the file was
// left for ever.
func TestCluster_LeftoverSaltTempFilesGoAtTheNextStart(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	n := &clusterNode{id: "n1", dir: filepath.Join(base, "n1"), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	require.NoError(t, os.MkdirAll(n.dir, 0o755))
	writeLeftovers(t, n.dir, saltTempLeftovers...)
	// Not of its naming: kept.
	others := []string{saltFile + ".tmp", saltFile + ".tmp12x", "x" + saltFile + ".tmp9", saltFile + ".tmp7.bak"}
	writeLeftovers(t, n.dir, others...)
	require.NoError(t, os.Mkdir(filepath.Join(n.dir, saltFile+".tmp99"), 0o755))
	start := func(extra ...string) *server {
		return startServe(t, append([]string{"--dir", n.dir, "--listen", n.listen, "--cluster-id", n.id,
			"--cluster-raft", n.raft, "--cluster-admin", n.admin, "--cluster-bootstrap", "--cluster-secret-file", secretFile}, extra...)...)
	}
	serving := func(what string) {
		t.Helper()
		eventually(t, 60*time.Second, what, func() bool {
			s, ok := n.status(t)
			return ok && s.Serving
		})
	}

	// The salt is absent: the flag's is kept.
	n.srv = start("--cluster-salt", "orders-eu")
	serving("n1 leads with the flag")
	require.Equal(t, 0, n.srv.stop(t))
	for _, name := range saltTempLeftovers {
		assert.NoFileExists(t, filepath.Join(n.dir, name), "a leftover of the salt's write goes: %s", n.srv.stderr)
	}
	for _, name := range others {
		assert.FileExists(t, filepath.Join(n.dir, name), "a file of another naming stays")
	}
	assert.DirExists(t, filepath.Join(n.dir, saltFile+".tmp99"), "a directory stays")
	salt, store, err := keptSalt(n.dir, nil, false)
	require.NoError(t, err)
	assert.Equal(t, saltKept, store)
	assert.Equal(t, "orders-eu", string(salt))

	// The salt is present: it is used, the leftovers go.
	writeLeftovers(t, n.dir, saltTempLeftovers...)
	n.srv = start()
	serving("n1 leads with the kept salt")
	assert.Contains(t, n.srv.stderr.String(), saltFingerprint([]byte("orders-eu")), "it proves the secret with the kept salt")
	require.Equal(t, 0, n.srv.stop(t))
	for _, name := range saltTempLeftovers {
		assert.NoFileExists(t, filepath.Join(n.dir, name), "a leftover of the salt's write goes: %s", n.srv.stderr)
	}
}

// A directory that holds nothing but the leftovers of a crashed first
// start is one that holds nothing: a start refused before the node wrote
// anything leaves it empty, not holding the salt of a node that never
// opened. Before, the leftovers made it a directory that held something,
// and the refused start's salt stayed.
func TestCluster_RefusedStartAfterALeftoverSaltTempLeavesNoSalt(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	dir := filepath.Join(base, "n1")
	require.NoError(t, os.Mkdir(dir, 0o755))
	writeLeftovers(t, dir, saltTempLeftovers...)
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
		"--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-salt", "orders-ue", "--cluster-log-store", "bogus")
	assert.Equal(t, exitUsage, waitExit(t, srv), "%s", srv.stderr)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Empty(t, names, "a refused start leaves nothing: %s", srv.stderr)
}
