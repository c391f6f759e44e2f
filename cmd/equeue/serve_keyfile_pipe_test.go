//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// readKeyFileWithin reads --kafka-record-key-file path as serve's start
// does, with tokenFileWait set to wait, and fails the test if that has
// not returned within 30 seconds: serve's start would wait for ever.
func readKeyFileWithin(t *testing.T, path string, wait time.Duration) ([]byte, error) {
	t.Helper()
	old := tokenFileWait
	tokenFileWait = wait
	t.Cleanup(func() { tokenFileWait = old })
	type result struct {
		key []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		key, err := readKafkaRecordKeyFile(path)
		done <- result{key, err}
	}()
	select {
	case r := <-done:
		return r.key, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("reading --kafka-record-key-file %s has not returned after 30s: serve's start would wait for ever", path)
		return nil, nil
	}
}

// --kafka-record-key-file takes a pipe that a program writes the key to,
// as --token-file and --cluster-secret-file do: --kafka-record-key-file
// <(cmd), a key kept by a secrets manager, and a named pipe whose writer
// comes once serve opened it. Before, any pipe was refused as no regular
// file, though the key was there to read.
func TestReadKafkaRecordKeyFile_PipeOfAProgramGivesTheKey(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	key := bytes.Repeat([]byte("k"), kafkaRecordKeyLen)

	t.Run("process-substitution", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		wrote := make(chan error, 1)
		go func() {
			_, err := w.Write(append(bytes.Clone(key), '\n'))
			wrote <- errors.Join(err, w.Close())
		}()
		got, err := readKeyFileWithin(t, fmt.Sprintf("/dev/fd/%d", r.Fd()), time.Minute)
		require.NoError(t, <-wrote)
		require.NoError(t, err)
		assert.Equal(t, key, got)
	})

	t.Run("named-pipe-written-after-the-open", func(t *testing.T) {
		fifo := mkfifo(t)
		wrote := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for a reader
			if err != nil {
				wrote <- err
				return
			}
			_, err = w.Write(key)
			wrote <- errors.Join(err, w.Close())
		}()
		got, err := readKeyFileWithin(t, fifo, time.Minute)
		if err != nil {
			// The pipe was not opened: let the writer's open return.
			rd, oerr := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			require.NoError(t, oerr)
			defer rd.Close()
		}
		require.NoError(t, <-wrote)
		require.NoError(t, err)
		assert.Equal(t, key, got)
	})
}

// A named pipe at --kafka-record-key-file whose writer opens it, writes
// nothing and keeps it open is a usage error once tokenFileWait has
// passed, as a --token-file's: the read has a deadline.
func TestReadKafkaRecordKeyFile_SilentWriterFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	fifo := mkfifo(t)
	release, closed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(closed)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for a reader
		if err != nil {
			return
		}
		<-release
		_ = w.Close()
	}()
	_, err := readKeyFileWithin(t, fifo, 100*time.Millisecond)
	// A writer still waiting (the pipe was not opened) returns now.
	rd, oerr := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	require.NoError(t, oerr)
	close(release)
	<-closed
	require.NoError(t, rd.Close())
	var ce *cliError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, exitUsage, ce.code)
	assert.Contains(t, err.Error(), "--kafka-record-key-file "+fifo+":")
	assert.Contains(t, err.Error(), "nothing to read")
}
