package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster-salt file written by hand (echo SALT > cluster-salt, or an
// editor) ends with a newline that no --cluster-salt carries: one
// trailing newline (\n or \r\n) is dropped, as from a
// --cluster-secret-file, so the file holds the salt of the flag. Before,
// the file was taken byte for byte: the flag was refused as another
// salt, and a start without it proved another key than its peers.
func TestKeptSalt_HandWrittenFileDropsOneTrailingNewline(t *testing.T) {
	for _, content := range []string{"orders-eu\n", "orders-eu\r\n"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte(content), 0o600))
		salt, _, err := keptSalt(dir, []byte("orders-eu"), true)
		require.NoError(t, err, "%q", content)
		assert.Equal(t, "orders-eu", string(salt))
		salt, _, err = keptSalt(dir, nil, false)
		require.NoError(t, err, "%q", content)
		assert.Equal(t, "orders-eu", string(salt), "%q", content)
	}
	// Only one is dropped; a file of a newline alone holds no salt.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte("\n"), 0o600))
	_, _, err := keptSalt(dir, nil, false)
	assert.ErrorContains(t, err, "not a cluster salt")
}

// A --cluster-salt that ends with a newline would not read back from the
// node's file as given: it is a usage error.
func TestRaftSecret_SaltEndingWithANewlineIsAUsageError(t *testing.T) {
	secretFile := writeSecret(t, t.TempDir(), "secret")
	for _, salt := range []string{"orders-eu\n", "orders-eu\r\n"} {
		c := &clusterFlags{secretFile: secretFile, salt: salt, saltSet: true}
		_, _, err := c.raftSecret(false)
		var ce *cliError
		require.ErrorAs(t, err, &ce, "%q", salt)
		assert.Equal(t, exitUsage, ce.code)
		assert.Contains(t, err.Error(), "newline")
	}
}
