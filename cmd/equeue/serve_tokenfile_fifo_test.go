//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// readTokenFileWithin reads the token file path as serve does, with
// tokenFileWait set to wait, and fails the test if that does not return:
// serve's start would then wait for ever.
func readTokenFileWithin(t *testing.T, path string, wait time.Duration) ([]tokenSpec, error) {
	t.Helper()
	old := tokenFileWait
	tokenFileWait = wait
	t.Cleanup(func() { tokenFileWait = old })
	type result struct {
		specs []tokenSpec
		err   error
	}
	done := make(chan result, 1)
	go func() {
		specs, _, err := readTokenFiles([]string{path})
		done <- result{specs, err}
	}()
	select {
	case r := <-done:
		return r.specs, r.err
	case <-time.After(30 * time.Second):
		t.Fatalf("reading --token-file %s has not returned after 30s (tokenFileWait %v): serve's start would wait for ever", path, wait)
		return nil, nil
	}
}

// mkfifo makes a named pipe in a new directory and returns its path.
func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	return p
}

// TestTokenFile_FIFOThatGivesNothingFailsInsteadOfWaiting: a --token-file
// that is a named pipe no program writes to held serve's start for ever
// (the open of a FIFO waits for a writer), and so did one whose writer
// writes nothing and keeps it open. Each now fails, once tokenFileWait
// has passed, with a usage error naming the file, and leaves no goroutine
// behind. A pipe that a program writes to, as --token-file <(cmd) gives,
// is read as before, and so is a FIFO whose writer comes after serve
// opened it.
func TestTokenFile_FIFOThatGivesNothingFailsInsteadOfWaiting(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	t.Run("no-writer", func(t *testing.T) {
		p := mkfifo(t)
		_, err := readTokenFileWithin(t, p, 100*time.Millisecond)
		require.Error(t, err)
		var ce *cliError
		require.True(t, errors.As(err, &ce), "%v", err)
		assert.Equal(t, exitUsage, ce.code)
		assert.Contains(t, err.Error(), "--token-file "+p+":")
		assert.Contains(t, err.Error(), "nothing to read")
	})

	t.Run("silent-writer", func(t *testing.T) {
		p := mkfifo(t)
		release, closed := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(closed)
			w, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for the reader
			if err != nil {
				return
			}
			<-release
			_ = w.Close()
		}()
		_, err := readTokenFileWithin(t, p, 100*time.Millisecond)
		close(release)
		<-closed
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--token-file "+p+":")
		assert.Contains(t, err.Error(), "nothing to read")
	})

	t.Run("writer-after-the-open", func(t *testing.T) {
		p := mkfifo(t)
		wrote := make(chan error, 1)
		go func() {
			w, err := os.OpenFile(p, os.O_WRONLY, 0) // waits for the reader
			if err != nil {
				wrote <- err
				return
			}
			_, err = w.WriteString("# from a pipe\nfifo-1=produce\n")
			wrote <- errors.Join(err, w.Close())
		}()
		specs, err := readTokenFileWithin(t, p, time.Minute)
		require.NoError(t, err)
		require.NoError(t, <-wrote)
		require.Len(t, specs, 1)
		assert.Equal(t, "fifo-1=produce", specs[0].text)
		assert.Equal(t, 2, specs[0].line)
	})

	t.Run("process-substitution", func(t *testing.T) {
		// --token-file <(cmd): a pipe's /dev/fd path, its writer open.
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		wrote := make(chan error, 1)
		go func() {
			_, err := w.WriteString("pipe-1=consume\n")
			wrote <- errors.Join(err, w.Close())
		}()
		specs, err := readTokenFileWithin(t, fmt.Sprintf("/dev/fd/%d", r.Fd()), time.Minute)
		require.NoError(t, err)
		require.NoError(t, <-wrote)
		require.Len(t, specs, 1)
		assert.Equal(t, "pipe-1=consume", specs[0].text)
	})
}

// TestTokenFile_SilentFIFOsOpenIsReleasedBeforeServeFails: when serve gives
// up a --token-file that is a named pipe no program writes to, the open
// that waits for a writer is released, and the file it gives closed,
// before the failure is returned: the pipe then has no reader left, and
// whoever made it may remove it at once. Before, the release ran on a
// goroutine of its own, later: the pipe still had serve's reader when
// serve failed, and a release that came after the pipe was removed (the
// test's temporary directory, as in the test above) found nothing to
// open and left that open waiting for ever.
func TestTokenFile_SilentFIFOsOpenIsReleasedBeforeServeFails(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := mkfifo(t)
	_, err := readTokenFileWithin(t, p, 100*time.Millisecond)
	require.ErrorContains(t, err, "nothing to read")
	w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		_ = w.Close()
	}
	require.ErrorIs(t, err, syscall.ENXIO, "the pipe still has a reader: serve's open of it was not released")
	require.NoError(t, os.Remove(p)) // as its maker may, once serve failed
}
