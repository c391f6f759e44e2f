package store

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// shutFileLimit lowers the process's open-files limit to its lowest free
// descriptor, so that no file opens until one below it is closed (the
// limit bounds descriptor numbers, and a file takes the lowest free one:
// a limit at the count of open descriptors leaves every hole below the
// highest one free). Called again, it lowers the limit to a hole a close
// made since. It never raises the limit; the caller gives it back.
func shutFileLimit(t *testing.T) {
	t.Helper()
	fd, err := syscall.Dup(syscall.Stderr) // takes the lowest free descriptor
	if errors.Is(err, syscall.EMFILE) {
		return // none free below the limit
	}
	require.NoError(t, err)
	require.NoError(t, syscall.Close(fd))
	var low syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &low))
	low.Cur = uint64(fd)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
}

// shutFileLimit leaves no descriptor to open, a hole below the highest
// open one included, and none after a close made another hole.
func TestShutFileLimit_LeavesNoDescriptorFree(t *testing.T) {
	var limit syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit) })
	var files []*os.File
	for range 3 {
		f, err := os.Open(os.DevNull)
		require.NoError(t, err)
		files = append(files, f)
	}
	require.NoError(t, files[0].Close()) // a hole below the highest descriptor
	shutFileLimit(t)
	_, err := os.Open(os.DevNull)
	require.ErrorIs(t, err, syscall.EMFILE, "a file opened in a hole")

	require.NoError(t, files[1].Close()) // as a compaction closes a table
	shutFileLimit(t)
	_, err = os.Open(os.DevNull)
	require.ErrorIs(t, err, syscall.EMFILE, "a file opened in a hole made after the first shut")

	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit))
	require.NoError(t, files[2].Close())
}
