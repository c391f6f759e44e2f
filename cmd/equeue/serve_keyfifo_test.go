//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readsWithin runs read, which reads the named pipe fifo (or a link to
// it) as serve's start does, and fails the test if it has not returned
// within 30 seconds: serve's start would then wait for ever. The read
// is then released (a writer opens the pipe and closes it) so that no
// goroutine stays behind, and its error returned.
func readsWithin(t *testing.T, fifo string, read func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- read() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
	}
	t.Errorf("reading %s has not returned after 30s: serve's start would wait for ever", fifo)
	for {
		if woke, again := wakeFIFOOpen(fifo); woke || !again {
			break
		}
	}
	return <-done
}

// refusedAsNoRegularFile checks that err refuses path as no regular file, naming it.
func refusedAsNoRegularFile(t *testing.T, err error, path string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, errNotRegularFile)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "named pipe")
}

// fifoAt makes a named pipe at path.
func fifoAt(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(path, 0o600))
}

// A kafka-record-key in the directory that is a named pipe, or a link to
// one, is refused at once, naming the file, and left as it was. Before,
// the open waited for a writer, and serve's start with it for ever.
func TestKeptKafkaRecordKey_NamedPipeIsRefusedAtOnce(t *testing.T) {
	for _, link := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, kafkaRecordKeyFile)
		fifo := path
		if link {
			fifo = filepath.Join(t.TempDir(), "key")
			require.NoError(t, os.Symlink(fifo, path))
		}
		fifoAt(t, fifo)
		err := readsWithin(t, fifo, func() error {
			_, err := keptKafkaRecordKey(dir)
			return err
		})
		refusedAsNoRegularFile(t, err, path)
		st, err := os.Lstat(path)
		require.NoError(t, err)
		if link {
			assert.Equal(t, os.ModeSymlink, st.Mode().Type(), "the link is left as it was")
		} else {
			assert.Equal(t, os.ModeNamedPipe, st.Mode().Type(), "the pipe is left as it was")
		}
	}
}

// --kafka-record-key-file naming a named pipe, or a link to one, that no
// program writes to is a usage error once tokenFileWait has passed,
// naming the file, as a --token-file's, and serve's open of it is
// released: the pipe has no reader left. Before the pipe was read as
// --token-file's, serve's start waited for a writer for ever; a pipe a
// program writes to gives the key
// (TestReadKafkaRecordKeyFile_PipeOfAProgramGivesTheKey).
func TestReadKafkaRecordKeyFile_NamedPipeIsAUsageError(t *testing.T) {
	for _, link := range []bool{false, true} {
		fifo := filepath.Join(t.TempDir(), "key")
		fifoAt(t, fifo)
		path := fifo
		if link {
			path = filepath.Join(t.TempDir(), "link")
			require.NoError(t, os.Symlink(fifo, path))
		}
		_, err := readKeyFileWithin(t, path, 100*time.Millisecond)
		require.Error(t, err)
		var ce *cliError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, exitUsage, ce.code)
		assert.Contains(t, err.Error(), "--kafka-record-key-file "+path+":")
		assert.Contains(t, err.Error(), "nothing to read")
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_ = w.Close()
		}
		require.ErrorIs(t, err, syscall.ENXIO, "the pipe still has a reader: serve's open of it was not released")
	}
}

// A cluster-salt in the node's directory that is a named pipe, or a link
// to one, is refused at once, naming the file, with or without the flag.
// Before, the read waited for a writer, and the node's start for ever.
func TestKeptSalt_NamedPipeIsRefusedAtOnce(t *testing.T) {
	for _, link := range []bool{false, true} {
		for _, flag := range []string{"", "orders-eu"} {
			dir := t.TempDir()
			path := filepath.Join(dir, saltFile)
			fifo := path
			if link {
				fifo = filepath.Join(t.TempDir(), "salt")
				require.NoError(t, os.Symlink(fifo, path))
			}
			fifoAt(t, fifo)
			err := readsWithin(t, fifo, func() error {
				_, _, err := keptSalt(dir, []byte(flag), flag != "")
				return err
			})
			refusedAsNoRegularFile(t, err, path)
		}
	}
}

// --cluster-secret-file has no such hole: it takes a named pipe, as
// --token-file does (a secret from <(cmd)), and one that nobody writes
// to fails once tokenFileWait has passed, a usage error naming it.
func TestReadSecretFile_NamedPipeWithoutWriterFails(t *testing.T) {
	old := tokenFileWait
	tokenFileWait = 100 * time.Millisecond
	t.Cleanup(func() { tokenFileWait = old })
	fifo := filepath.Join(t.TempDir(), "secret")
	fifoAt(t, fifo)
	err := readsWithin(t, fifo, func() error {
		_, _, err := (&clusterFlags{secretFile: fifo}).raftSecret(false)
		return err
	})
	require.Error(t, err)
	var ce *cliError
	require.True(t, errors.As(err, &ce), "%v", err)
	assert.Equal(t, exitUsage, ce.code)
	assert.Contains(t, err.Error(), "--cluster-secret-file "+fifo)
	assert.Contains(t, err.Error(), "nothing to read")
}
