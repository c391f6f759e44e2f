package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A symbolic link named as the salt's temporary file is no leftover of
// its write: removeSaltTemps leaves it, and the file it points to,
// whether it points to a file elsewhere or to the node's own salt.
func TestRemoveSaltTemps_LeavesSymbolicLinksOfTheNaming(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "keep")
	require.NoError(t, os.WriteFile(target, []byte("not the node's"), 0o600))
	require.NoError(t, storeSalt(dir, []byte("orders-eu")))
	links := map[string]string{saltTempPrefix + "5": target, saltTempPrefix + "6": filepath.Join(dir, saltFile)}
	for name, to := range links {
		require.NoError(t, os.Symlink(to, filepath.Join(dir, name)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, saltTempPrefix+"7"), []byte("left"), 0o600))

	require.NoError(t, removeSaltTemps(dir))
	assert.NoFileExists(t, filepath.Join(dir, saltTempPrefix+"7"), "a leftover goes")
	for name := range links {
		_, err := os.Lstat(filepath.Join(dir, name))
		assert.NoError(t, err, "the link %s stays", name)
	}
	assert.FileExists(t, target, "the file a link points to stays")
	kept, _, err := keptSalt(dir, nil, false)
	require.NoError(t, err)
	assert.Equal(t, "orders-eu", string(kept), "the salt a link points to stays")
}
