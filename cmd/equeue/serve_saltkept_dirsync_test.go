package main

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A file system that cannot sync a directory (EINVAL, ENOTSUP) does not
// keep a salted node from starting: the salt is kept all the same, as
// the cluster package does with its own directories. Before, serve
// failed to keep the salt, and so to start, on such a file system.
func TestStoreSalt_DirectoryThatCannotBeSyncedKeepsTheSalt(t *testing.T) {
	for _, errno := range []error{syscall.EINVAL, syscall.ENOTSUP} {
		t.Run(errno.Error(), func(t *testing.T) {
			failDirSync(t, &os.PathError{Op: "sync", Path: "dir", Err: errno})
			dir := t.TempDir()
			require.NoError(t, storeSalt(dir, []byte("orders-eu")))
			got, _, err := keptSalt(dir, nil, false)
			require.NoError(t, err)
			assert.Equal(t, "orders-eu", string(got))
		})
	}
}

// Any other failure to sync the directory is one: the salt may be lost
// by a crash.
func TestStoreSalt_DirectorySyncFailureIsAnError(t *testing.T) {
	failDirSync(t, &os.PathError{Op: "sync", Path: "dir", Err: syscall.EIO})
	err := storeSalt(t.TempDir(), []byte("orders-eu"))
	require.ErrorIs(t, err, syscall.EIO)
	assert.Contains(t, err.Error(), "keep the cluster salt")
}

// failDirSync makes storeSalt's sync of its directory fail with err for
// the test.
func failDirSync(t *testing.T, err error) {
	t.Helper()
	prev := syncSaltDir
	syncSaltDir = func(*os.File) error { return err }
	t.Cleanup(func() { syncSaltDir = prev })
}
