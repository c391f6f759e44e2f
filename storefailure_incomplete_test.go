package equeue_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// incompleteSyncs makes the next n Syncs of r's store fail with an error
// matching store.ErrSyncIncomplete (n < 0: every one), as a Badger store
// does when it cannot list its memtable logs, and counts the Syncs made.
func incompleteSyncs(r *faultRig, n int64) *atomic.Int64 {
	var syncs atomic.Int64
	r.FS.OnSync(func() error {
		if k := syncs.Add(1); n < 0 || k <= n {
			return fmt.Errorf("%w: injected: too many open files", store.ErrSyncIncomplete)
		}
		return nil
	})
	return &syncs
}

// A Sync that stopped before its fsyncs (store.ErrSyncIncomplete) lost
// nothing, and a later Sync that succeeds covers every earlier write. The
// engine retries it: the send is answered stored, the engine keeps
// writing, and a reopen shows the message. It used to stop writing for
// good on the first such Sync.
func TestStoreFailure_IncompleteSyncIsRetried(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil) // SyncAlways
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			syncs := incompleteSyncs(r, 1)
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("first")})
			require.NoError(t, err, "a retried Sync succeeded: stored")
			require.GreaterOrEqual(t, syncs.Load(), int64(2), "the failed Sync was retried")
			require.NoError(t, r.E.StoreFailure(), "the engine keeps writing")

			_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("second")})
			require.NoError(t, err)
			assert.Equal(t, []string{"first", "second"}, queueBodies(t, r.E, "t", 0))
			r.reopen()
			assert.Equal(t, []string{"first", "second"}, queueBodies(t, r.E, "t", 0), "after a reopen")
		})
	}
}

// When every retry fails too, the outcome is unknown as after any failed
// fsync: the send gets ErrIndeterminate and the engine stops writing.
func TestStoreFailure_IncompleteSyncRetriesFailing(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			syncs := incompleteSyncs(r, -1)
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("lost?")})
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			require.ErrorIs(t, err, store.ErrSyncIncomplete)
			assert.Greater(t, syncs.Load(), int64(1), "retried before giving up")
			require.ErrorIs(t, r.E.StoreFailure(), store.ErrSyncIncomplete, "the engine stopped writing")
			made := syncs.Load()

			_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("after")})
			require.ErrorIs(t, err, equeue.ErrStoreFailed)
			assert.Empty(t, queueBodies(t, r.E, "t", 0), "nothing of unknown outcome is shown")
			assert.Equal(t, made, syncs.Load(), "a refused write makes no Sync")
		})
	}
}

// Close's final Sync is retried as the engine's other Syncs are when it
// stopped before its fsyncs (store.ErrSyncIncomplete): one that succeeds
// on a retry gives a clean close, and only when every retry fails too
// does Close report it. It used to report the first such Sync.
func TestStoreFailure_IncompleteFinalSyncIsRetried(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, &equeue.Options{Sync: equeue.SyncNever})
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("kept")})
			require.NoError(t, err)
			syncs := incompleteSyncs(r, 1)
			require.NoError(t, r.E.Close(), "the final Sync succeeded on its retry")
			assert.EqualValues(t, 2, syncs.Load(), "the final Sync and its retry")
			r.reopen()
			assert.Equal(t, []string{"kept"}, queueBodies(t, r.E, "t", 0))
		})
	}
}

func TestStoreFailure_IncompleteFinalSyncRetriesFailing(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, &equeue.Options{Sync: equeue.SyncNever})
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			syncs := incompleteSyncs(r, -1)
			err := r.E.Close()
			require.ErrorIs(t, err, store.ErrSyncIncomplete, "reported once every retry failed")
			assert.EqualValues(t, 4, syncs.Load(), "the final Sync and its 3 retries")
			r.reopen() // the store closed all the same
		})
	}
}
