package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A crash of the first start with --kafka between the write of the
// record key's temporary file and its rename leaves that file in the
// directory. The next start removes it, and only what bears its naming
// (regular files, not links nor directories), as a cluster start does
// the salt's. Before, the file was left for ever.
func TestServe_LeftoverKafkaRecordKeyTempFilesGoAtTheNextStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t")
	leftovers := []string{kafkaRecordKeyFile + ".tmp-1234567", kafkaRecordKeyFile + ".tmp-42"}
	writeLeftovers(t, dir, leftovers...)
	others := []string{kafkaRecordKeyFile + ".tmp-", kafkaRecordKeyFile + ".tmp-12x", "x" + kafkaRecordKeyFile + ".tmp-9", kafkaRecordKeyFile + ".tmp-7.bak", kafkaRecordKeyFile + ".tmp9"}
	writeLeftovers(t, dir, others...)
	require.NoError(t, os.Mkdir(filepath.Join(dir, kafkaRecordKeyFile+".tmp-99"), 0o755))
	elsewhere := filepath.Join(t.TempDir(), "keep")
	require.NoError(t, os.WriteFile(elsewhere, []byte("not the directory's"), 0o600))
	link := filepath.Join(dir, kafkaRecordKeyFile+".tmp-5")
	require.NoError(t, os.Symlink(elsewhere, link))

	srv, _ := startKafkaServe(t, dir)
	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	for _, name := range leftovers {
		assert.NoFileExists(t, filepath.Join(dir, name), "a leftover of the key's write goes: %s", srv.stderr)
	}
	for _, name := range others {
		assert.FileExists(t, filepath.Join(dir, name), "a file of another naming stays")
	}
	assert.DirExists(t, filepath.Join(dir, kafkaRecordKeyFile+".tmp-99"), "a directory stays")
	_, err := os.Lstat(link)
	assert.NoError(t, err, "a link stays")
	assert.FileExists(t, elsewhere, "the file a link points to stays")
	key, err := os.ReadFile(filepath.Join(dir, kafkaRecordKeyFile))
	require.NoError(t, err)
	assert.Len(t, key, kafkaRecordKeyLen, "the key is made as in a directory without them")

	// The key is there: it is read, the leftovers of a later crash go.
	writeLeftovers(t, dir, leftovers...)
	srv, _ = startKafkaServe(t, dir)
	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	for _, name := range leftovers {
		assert.NoFileExists(t, filepath.Join(dir, name), "a leftover of the key's write goes: %s", srv.stderr)
	}
	again, err := os.ReadFile(filepath.Join(dir, kafkaRecordKeyFile))
	require.NoError(t, err)
	assert.Equal(t, key, again, "the key is kept")
}
