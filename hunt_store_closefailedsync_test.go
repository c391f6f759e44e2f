package equeue_test

import (
	"errors"
	"fmt"
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

// TestHuntStore_CloseAfterAFailedFsyncThatTheStoreKeepsFailing: a store
// that fails every Sync with the same error once one failed (the injected
// failure here) let Close skip ErrStoreFailed, as if the final Sync's
// failure were a different matter; Close matches ErrStoreFailed after a
// failed fsync, as documented, and reports that failure once.
func TestHuntStore_CloseAfterAFailedFsyncThatTheStoreKeepsFailing(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	boom := errors.New("injected fsync failure")
	r.FS.OnSync(func() error { return boom })
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)

	err = r.E.Close()
	require.ErrorIs(t, err, equeue.ErrStoreFailed, "the close after a failed fsync is not clean")
	require.Equal(t, 1, failuresReported(err, boom), "%v", err)
}

// TestHuntStore_CloseReportsAFailedFsyncOnceWhenTheStoreRepeatsIt: the
// Badger store fails every Sync after a failed one with a new error
// wrapping the first failure (not the error the engine recorded, which
// the store's Sync wrapped): Close reported the failure twice, once as
// the final sync's and once as ErrStoreFailed. It reports it once.
func TestHuntStore_CloseReportsAFailedFsyncOnceWhenTheStoreRepeatsIt(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	boom := errors.New("injected fsync failure")
	calls := 0
	r.FS.OnSync(func() error {
		calls++
		if calls == 1 {
			return fmt.Errorf("store: sync: %w", boom)
		}
		return fmt.Errorf("store: sync: an earlier fsync failed: %w", boom)
	})
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)

	err = r.E.Close()
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	require.ErrorIs(t, err, r.E.StoreFailure())
	require.Equal(t, 1, failuresReported(err, boom), "%v", err)
}

// failuresReported counts the errors joined in err that wrap cause.
func failuresReported(err, cause error) int {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		if errors.Is(err, cause) {
			return 1
		}
		return 0
	}
	n := 0
	for _, e := range joined.Unwrap() {
		n += failuresReported(e, cause)
	}
	return n
}
