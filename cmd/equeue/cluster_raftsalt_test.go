package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// --cluster-salt gives the cluster a salt of its own for the key its
// nodes prove the secret with: a peer with the secret and the salt
// connects to the node's Raft port, one with the secret and no salt, or
// another salt, does not.
func TestCluster_SaltFlagSaltsTheRaftKey(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	content, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	secret := []byte(strings.TrimSuffix(string(content), "\n"))
	n1 := startClusterNode(t, base, "n1", true, "--cluster-secret-file", secretFile, "--cluster-salt", "orders-eu")
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	})
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
	assert.NoError(t, dial("orders-eu"), "a peer with the secret and the salt connects")
	assert.ErrorContains(t, dial(""), "refused this node's proof", "a peer without the salt does not")
	assert.ErrorContains(t, dial("orders-us"), "refused this node's proof", "a peer with another salt does not")
}

// --cluster-salt salts the key of --cluster-secret-file: without one it
// is a usage error, as is an empty one.
func TestCluster_SaltFlagNeedsASecretFile(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	node := func(id string, extra ...string) []string {
		return append([]string{"serve", "--dir", filepath.Join(base, id), "--listen", freePort(t),
			"--cluster-id", id, "--cluster-raft", freePort(t), "--cluster-bootstrap"}, extra...)
	}
	fails(t, 2, "--cluster-salt needs --cluster-secret-file", node("nosecret", "--cluster-salt", "orders-eu")...)
	fails(t, 2, "--cluster-salt needs --cluster-secret-file", node("insecure", "--token", "ops=all", "--cluster-insecure-raft", "--cluster-salt", "orders-eu")...)
	fails(t, 2, "--cluster-salt is empty", node("empty", "--cluster-secret-file", writeSecret(t, base, "s"), "--cluster-salt", "")...)
	_, err := os.Stat(filepath.Join(base, "nosecret"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused node creates no directory")
}
