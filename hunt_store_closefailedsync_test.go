package equeue_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestHuntStore_CloseReportsAnEarlierFailedFsync: a store of the
// program's own whose Sync failed once and then succeeds again (a wrapper
// that retries, a store without Badger's sticky failure) let Close return
// nil: the engine had answered the send "outcome unknown" and stopped its
// writes, yet its close reported a clean shutdown. Close now reports the
// failed fsync (ErrStoreFailed, wrapping it).
func TestHuntStore_CloseReportsAnEarlierFailedFsync(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	boom := errors.New("injected fsync failure")
	failed := false
	r.FS.OnSync(func() error {
		if !failed {
			failed = true
			return boom
		}
		return nil
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	require.ErrorIs(t, r.E.StoreFailure(), boom)

	err = r.E.Close()
	require.ErrorIs(t, err, equeue.ErrStoreFailed, "the close after a failed fsync is not clean")
	require.ErrorIs(t, err, boom)
	require.ErrorIs(t, r.E.Close(), boom, "a later Close returns the first one's result")
}
