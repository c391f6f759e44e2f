package main

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// A node keeps its --cluster-salt in its directory: restarted without
// the flag it proves the secret with the salt it had, and its salted
// peers still take it; restarted with another salt it refuses to start,
// exit code 2, naming both salts' fingerprints. Before, a node restarted
// without the flag proved another key, and its peers refused it with
// only a line of their logs.
func TestCluster_SaltIsKeptInTheNodesDirectory(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	content, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	secret := []byte(strings.TrimSuffix(string(content), "\n"))
	n1 := startClusterNode(t, base, "n1", true, "--cluster-secret-file", secretFile, "--cluster-salt", "orders-eu")
	leads := func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	}
	eventually(t, 60*time.Second, "n1 leads", leads)
	require.Equal(t, 0, n1.srv.stop(t))

	// The same node, on the same directory and ports, without the flag.
	restart := func(extra ...string) *server {
		return startServe(t, append([]string{"--dir", n1.dir, "--listen", n1.listen, "--cluster-id", n1.id,
			"--cluster-raft", n1.raft, "--cluster-admin", n1.admin, "--cluster-secret-file", secretFile}, extra...)...)
	}
	n1.srv = restart()
	eventually(t, 60*time.Second, "n1 leads again", leads)
	dial := func(salt string) error {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s, err := cluster.NewSaltedSecureStream(lis, nil, secret, []byte(salt))
		require.NoError(t, err)
		defer s.Close()
		c, err := s.Dial(raft.ServerAddress(n1.raft), 30*time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	assert.NoError(t, dial("orders-eu"), "a peer with the cluster's salt is taken by the node restarted without the flag")
	assert.ErrorContains(t, dial(""), "refused this node's proof", "a peer without the salt is not")
	require.Equal(t, 0, n1.srv.stop(t))

	// With another salt it does not start.
	other := restart("--cluster-salt", "orders-us")
	select {
	case <-other.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve with another salt still runs: %s", other.stderr)
	}
	r := other.stderr.String()
	assert.Equal(t, exitUsage, other.cmd.ProcessState.ExitCode(), "%s", r)
	assert.Contains(t, r, "--cluster-salt", "%s", r)
	assert.Contains(t, r, saltFingerprint([]byte("orders-eu")), "the kept salt's fingerprint: %s", r)
	assert.Contains(t, r, saltFingerprint([]byte("orders-us")), "the flag's fingerprint: %s", r)

	// With the salt it keeps, it starts.
	n1.srv = restart("--cluster-salt", "orders-eu")
	eventually(t, 60*time.Second, "n1 leads with its own salt", leads)
}
