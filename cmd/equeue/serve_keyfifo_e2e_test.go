//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// equeue serve --kafka on a directory whose kafka-record-key is a link
// to a named pipe fails at once, naming the file, and leaves the link as
// it was. Before, its start waited for a writer for ever.
func TestServe_KafkaRecordKeyNamedPipeRefusesTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t")
	path := filepath.Join(dir, kafkaRecordKeyFile)
	fifo := filepath.Join(t.TempDir(), "key")
	fifoAt(t, fifo)
	require.NoError(t, os.Symlink(fifo, path))
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--kafka", freePort(t))
	t.Cleanup(func() { wakeFIFOOpen(fifo) }) // a start that waits: let it go
	assert.Equal(t, exitFailure, waitExit(t, srv), "%s", srv.stderr)
	assert.Contains(t, srv.stderr.String(), path)
	assert.Contains(t, srv.stderr.String(), "not a regular file")
	got, err := os.Readlink(path)
	require.NoError(t, err, "the link is left as it was")
	assert.Equal(t, fifo, got)
}
