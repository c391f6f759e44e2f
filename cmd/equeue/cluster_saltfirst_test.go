package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitExit waits for srv, a serve expected to fail at start, and returns
// its exit code.
func waitExit(t *testing.T, srv *server) int {
	t.Helper()
	select {
	case <-srv.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve still runs: %s", srv.stderr)
	}
	return srv.cmd.ProcessState.ExitCode()
}

// A node keeps its --cluster-salt before it opens anything: when the
// node fails to open (here its directory holds a file where the Raft
// directory goes, as a crash between the two would leave it), the salt
// is kept all the same, and the next start without the flag proves the
// secret with it, as its peers expect. Before, the salt was kept only
// once the node had opened, so a failure or a crash between left a node
// directory without it, and the next start without the flag ran
// unsalted, refused by every peer.
func TestCluster_SaltIsKeptBeforeTheNodeOpens(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	n := &clusterNode{id: "n1", dir: filepath.Join(base, "n1"), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	require.NoError(t, os.MkdirAll(n.dir, 0o755))
	blocker := filepath.Join(n.dir, "raft")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	start := func(extra ...string) *server {
		return startServe(t, append([]string{"--dir", n.dir, "--listen", n.listen, "--cluster-id", n.id,
			"--cluster-raft", n.raft, "--cluster-admin", n.admin, "--cluster-bootstrap", "--cluster-secret-file", secretFile}, extra...)...)
	}
	failed := start("--cluster-salt", "orders-eu")
	assert.Equal(t, exitFailure, waitExit(t, failed), "the node cannot open: %s", failed.stderr)
	kept, _, err := keptSalt(n.dir, nil, false)
	require.NoError(t, err, "the salt is kept although the node failed to open: %s", failed.stderr)
	assert.Equal(t, "orders-eu", string(kept))

	require.NoError(t, os.Remove(blocker))
	n.srv = start()
	eventually(t, 60*time.Second, "n1 leads without the flag", func() bool {
		s, ok := n.status(t)
		return ok && s.Serving
	})
	assert.Contains(t, n.srv.stderr.String(), saltFingerprint([]byte("orders-eu")), "it proves the secret with the kept salt")
	require.Equal(t, 0, n.srv.stop(t))

	n.srv = start("--cluster-salt", "orders-eu")
	eventually(t, 60*time.Second, "n1 leads with the same flag", func() bool {
		s, ok := n.status(t)
		return ok && s.Serving
	})
	require.Equal(t, 0, n.srv.stop(t))
}

// A node that failed before it opened anything in a directory it
// created leaves no directory behind, as a node without a secret does:
// the salt it kept there is removed with it.
func TestCluster_SaltOfANewDirectoryGoesWithAFailedStart(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	dir := filepath.Join(base, "n1")
	// --cluster-log-store is checked by the node when it opens, before it
	// creates anything.
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
		"--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-salt", "orders-eu", "--cluster-log-store", "bogus")
	assert.Equal(t, exitUsage, waitExit(t, srv), "%s", srv.stderr)
	assert.NoDirExists(t, dir, "a refused node leaves no directory: %s", srv.stderr)
}
