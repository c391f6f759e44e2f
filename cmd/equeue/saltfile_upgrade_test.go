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

// oldSalt is a salt that ends with a newline, as an equeue before the
// salt's newline was dropped (and such a --cluster-salt refused) took it
// from its command line (a YAML block scalar adds one) and proved the
// Raft secret with: every byte, the newline too.
const oldSalt = "orders-eu\n"

// writeOldSaltFile writes dir's salt file as that equeue kept it: the
// salt's bytes alone, no record.
func writeOldSaltFile(t *testing.T, dir, salt string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte(salt), 0o600))
}

// A node upgraded from an equeue that kept a salt ending with a newline
// byte for byte, and restarted with the same --cluster-salt, proves the
// Raft secret with every byte of it, as its peers still do; restarted
// later without the flag, it goes on so. Before, the flag was refused
// (a salt ending with a newline), and without it the node read the file
// without its newline and proved another key: its peers refused it.
func TestCluster_SaltKeptByAnOlderEquequeWithANewlineStaysWhole(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	content, err := os.ReadFile(secretFile)
	require.NoError(t, err)
	secret := []byte(strings.TrimSuffix(string(content), "\n"))
	n := &clusterNode{id: "n1", dir: filepath.Join(base, "n1"), listen: freePort(t), raft: freePort(t), admin: freePort(t)}
	writeOldSaltFile(t, n.dir, oldSalt)
	start := func(extra ...string) *server {
		return startServe(t, append([]string{"--dir", n.dir, "--listen", n.listen, "--cluster-id", n.id,
			"--cluster-raft", n.raft, "--cluster-admin", n.admin, "--cluster-bootstrap", "--cluster-secret-file", secretFile}, extra...)...)
	}
	dial := func(salt string) error {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s, err := cluster.NewSaltedSecureStream(lis, nil, secret, []byte(salt))
		require.NoError(t, err)
		defer s.Close()
		c, err := s.Dial(raft.ServerAddress(n.raft), 30*time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	for _, extra := range [][]string{{"--cluster-salt", oldSalt}, nil} {
		n.srv = start(extra...)
		eventually(t, 60*time.Second, "n1 leads", func() bool {
			if n.srv.exited() {
				t.Fatalf("serve %v exited: %s", extra, n.srv.stderr)
			}
			s, ok := n.status(t)
			return ok && s.Serving
		})
		assert.NoError(t, dial(oldSalt), "a peer with the salt of the older equeue connects (%v): %s", extra, n.srv.stderr)
		assert.ErrorContains(t, dial(strings.TrimSuffix(oldSalt, "\n")), "refused this node's proof", "a peer with the salt less its newline does not (%v)", extra)
		require.Equal(t, 0, n.srv.stop(t))
	}
}

// Started without the flag, a node whose file, of no record, ends with
// a newline cannot tell a salt an older equeue kept whole from one
// written by hand (echo SALT > FILE): it refuses to start, a usage error
// naming both, rather than prove a key one of its peers' may refuse.
// Given the salt whole, newline included, it takes it, and the file is
// written again as this equeue keeps a salt, so later starts need no
// flag; given the salt less the newline, it refuses to start
// (TestKeptSalt_FlagLessTheNewlineOfALegacyFileChangesNoSalt). Before,
// the newline was dropped whatever wrote it.
func TestKeptSalt_NewlineOfAFileWithoutARecordIsTheFlagsToTell(t *testing.T) {
	dir := t.TempDir()
	writeOldSaltFile(t, dir, oldSalt)
	_, _, err := keptSalt(dir, nil, false)
	var ce *cliError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, exitUsage, ce.code)
	assert.Contains(t, err.Error(), saltFingerprint([]byte(oldSalt)), "%v", err)
	assert.Contains(t, err.Error(), saltFingerprint([]byte("orders-eu")), "%v", err)
	assert.Contains(t, err.Error(), "--cluster-salt", "%v", err)

	salt, keep, err := keptSalt(dir, []byte(oldSalt), true)
	require.NoError(t, err)
	assert.Equal(t, oldSalt, string(salt))
	assert.Equal(t, saltRewrite, keep)
	require.NoError(t, replaceSalt(dir, salt))
	salt, keep, err = keptSalt(dir, nil, false)
	require.NoError(t, err)
	assert.Equal(t, oldSalt, string(salt), "the salt the flag told, whole")
	assert.Equal(t, saltKept, keep)

	_, _, err = keptSalt(dir, []byte("orders-ue"), true)
	require.ErrorAs(t, err, &ce, "another salt is refused")
}

// What this equeue keeps reads back byte for byte, a newline at the end
// too, and an older equeue's file of a salt without one reads as before.
func TestKeptSalt_RecordReadsBackWhole(t *testing.T) {
	for _, salt := range []string{"orders-eu", oldSalt, "a\r\n", "\x00lead"} {
		dir := t.TempDir()
		require.NoError(t, storeSalt(dir, []byte(salt)))
		got, keep, err := keptSalt(dir, nil, false)
		require.NoError(t, err, "%q", salt)
		assert.Equal(t, salt, string(got))
		assert.Equal(t, saltKept, keep)
	}
	dir := t.TempDir()
	writeOldSaltFile(t, dir, "orders-eu")
	got, _, err := keptSalt(dir, []byte("orders-eu"), true)
	require.NoError(t, err)
	assert.Equal(t, "orders-eu", string(got))
}
