package store

import (
	"errors"
	"io/fs"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failLogListing makes the listing number fail (1: the first) of dir's logs
// fail with cause, and every other listing run as usual.
func failLogListing(t *testing.T, dir string, fail int64, cause error) {
	t.Helper()
	var n atomic.Int64
	saved := readLogDir
	readLogDir = func(name string) ([]os.DirEntry, error) {
		if name == dir && n.Add(1) == fail {
			return nil, cause
		}
		return saved(name)
	}
	t.Cleanup(func() { readLogDir = saved })
}

// An Open that cannot list its directory's logs (the memtable logs, then
// the value-log files) fails with that cause and the directory's name, not
// with ErrSyncIncomplete, which says a Sync did not complete; and it
// leaves the directory free for the next Open.
func TestOpenBadger_FailedLogListingFailsTheOpenWithItsCause(t *testing.T) {
	for _, c := range []struct {
		name string
		fail int64
	}{{"memtable logs", 1}, {"value-log files", 2}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := OpenBadger(dir, nil)
			require.NoError(t, err)
			require.NoError(t, s.Close())

			cause := &fs.PathError{Op: "readdirent", Path: dir, Err: errors.New("injected listing failure")}
			failLogListing(t, dir, c.fail, cause)
			s, err = OpenBadger(dir, nil)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, cause)
			assert.NotErrorIs(t, err, ErrSyncIncomplete, "an Open is no Sync: %v", err)
			assert.Contains(t, err.Error(), dir)

			readLogDir = os.ReadDir
			s, err = OpenBadger(dir, nil)
			require.NoError(t, err, "the failed Open left the directory locked")
			require.NoError(t, s.Close())
		})
	}
}
