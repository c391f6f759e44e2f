package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cluster-salt file written by hand (echo SALT > cluster-salt, or an
// editor) ends with a newline that no --cluster-salt carries; an earlier
// equeue kept a salt ending with one so too, whole, and a file of no
// record does not say which wrote it. Written again without the newline
// (printf %s SALT > FILE), as the refusal of the flag less the newline
// says (TestKeptSalt_FlagLessTheNewlineOfALegacyFileChangesNoSalt), it
// holds the salt of the flag, and keeps it with a record for the next
// starts without the flag. A file of a newline alone holds no salt.
func TestKeptSalt_HandWrittenFileDropsOneTrailingNewline(t *testing.T) {
	for _, content := range []string{"orders-eu\n", "orders-eu\r\n"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte(content), 0o600))
		_, _, err := keptSalt(dir, []byte("orders-eu"), true)
		require.Error(t, err, "%q: the flag less the newline tells nothing", content)
		assert.Contains(t, err.Error(), "printf %s SALT > FILE", "%q", content)
		require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte("orders-eu"), 0o600))
		salt, keep, err := keptSalt(dir, []byte("orders-eu"), true)
		require.NoError(t, err, "%q", content)
		assert.Equal(t, "orders-eu", string(salt))
		assert.Equal(t, saltKept, keep)
		salt, _, err = keptSalt(dir, nil, false)
		require.NoError(t, err, "%q", content)
		assert.Equal(t, "orders-eu", string(salt), "%q", content)
	}
	// A file of a newline alone holds no salt.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, saltFile), []byte("\n"), 0o600))
	_, _, err := keptSalt(dir, nil, false)
	assert.ErrorContains(t, err, "not a cluster salt")
}

// A --cluster-salt that ends with a newline is a usage error unless the
// node keeps that very salt (an earlier equeue kept it so): a shell's or
// a configuration's newline taken for part of the salt would split the
// cluster.
func TestKeptSalt_SaltEndingWithANewlineIsAUsageError(t *testing.T) {
	for _, salt := range []string{"orders-eu\n", "orders-eu\r\n"} {
		for _, kept := range []string{"", "orders-eu"} {
			dir := t.TempDir()
			if kept != "" {
				require.NoError(t, storeSalt(dir, []byte(kept)))
			}
			_, _, err := keptSalt(dir, []byte(salt), true)
			var ce *cliError
			require.ErrorAs(t, err, &ce, "%q kept %q", salt, kept)
			assert.Equal(t, exitUsage, ce.code)
			assert.Contains(t, err.Error(), "newline")
		}
		dir := t.TempDir()
		require.NoError(t, storeSalt(dir, []byte(salt)))
		got, _, err := keptSalt(dir, []byte(salt), true)
		require.NoError(t, err, "the salt the node keeps, %q", salt)
		assert.Equal(t, salt, string(got))
	}
}
