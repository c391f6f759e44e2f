package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster-salt file of no record that ends with a newline holds the
// salt an earlier equeue kept whole, newline included, and proved the
// Raft secret with; a --cluster-salt that is that salt less its newline
// agrees with the file up to the newline but is not the node's salt.
// The start is refused, a usage error naming both fingerprints, and the
// file left as it was: the node keeps the salt it used. Before, the flag
// was taken as the reading of a file written by hand, the file written
// again with it, and the node proved another key than its peers from
// then on. The salt with its newline is taken, and a salt that is
// neither is refused as another salt.
func TestKeptSalt_FlagLessTheNewlineOfALegacyFileChangesNoSalt(t *testing.T) {
	for _, content := range []string{"orders-eu\n", "orders-eu\r\n"} {
		dir := t.TempDir()
		writeOldSaltFile(t, dir, content)
		short := strings.TrimRight(content, "\r\n")

		_, _, err := keptSalt(dir, []byte(short), true)
		var ce *cliError
		require.ErrorAs(t, err, &ce, "%q", content)
		assert.Equal(t, exitUsage, ce.code)
		assert.Contains(t, err.Error(), saltFingerprint([]byte(content)), "%v", err)
		assert.Contains(t, err.Error(), saltFingerprint([]byte(short)), "%v", err)
		assert.Contains(t, err.Error(), "printf %s", "how to keep the reading of a file written by hand: %v", err)
		got, err := os.ReadFile(filepath.Join(dir, saltFile))
		require.NoError(t, err)
		assert.Equal(t, content, string(got), "the file is left as it was")

		_, _, err = keptSalt(dir, []byte("orders-ue"), true)
		require.ErrorAs(t, err, &ce, "another salt is refused")
		assert.Equal(t, exitUsage, ce.code)
		assert.Contains(t, err.Error(), "is not the salt this node keeps", "%v", err)

		salt, keep, err := keptSalt(dir, []byte(content), true)
		require.NoError(t, err, "the salt whole, %q", content)
		assert.Equal(t, content, string(salt))
		assert.Equal(t, saltRewrite, keep)
	}
}

// The same through serve: a node of an earlier equeue whose file holds
// its salt with a newline, started with the flag less the newline, exits
// with a usage error and leaves its directory as it was.
func TestCluster_FlagLessTheNewlineOfALegacyFileIsRefused(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	dir := filepath.Join(base, "n1")
	writeOldSaltFile(t, dir, oldSalt)
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
		"--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-salt", strings.TrimSuffix(oldSalt, "\n"))
	assert.Equal(t, exitUsage, waitExit(t, srv), "%s", srv.stderr)
	assert.Contains(t, srv.stderr.String(), saltFingerprint([]byte(oldSalt)))
	got, err := os.ReadFile(filepath.Join(dir, saltFile))
	require.NoError(t, err)
	assert.Equal(t, oldSalt, string(got), "the salt file is left as it was")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing else is created: %v", entries)
}
