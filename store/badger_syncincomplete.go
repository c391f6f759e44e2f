package store

import (
	"errors"
	"fmt"
)

// ErrSyncIncomplete is matched by the error of a Sync (or of the Reclaim
// or Restore that syncs) that stopped before an fsync failed: it could not
// list the store's directory or open a memtable log to flush it (no file
// descriptor left, EMFILE, say). The writes before it are not known to be
// durable, but nothing was lost: the logs it did not flush are still dirty
// in the OS's cache, so, unlike after a failed fsync (see Sync), a later
// Sync tries again and can succeed.
var ErrSyncIncomplete = errors.New("store: sync incomplete: a memtable log could not be listed or opened")

// syncIncomplete wraps err, the failure of a look-up a Sync makes before
// its fsyncs (listing the directory, opening a log), with
// ErrSyncIncomplete.
func syncIncomplete(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSyncIncomplete, err)
}
