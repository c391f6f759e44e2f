package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// Open stores the lost ranges of the queues whose ends it raised and
// syncs them before the writer starts. That fsync failing was only
// logged, and the writer's next fsync, which may succeed without writing
// the pages the failed one could not (storefailure.go), then vouched for
// the sends after it: they were answered "stored" on a log that may end at
// the lost pages. Found by review. It now stops the engine's writes as any
// failed fsync of the engine does.
func TestStoreFailure_FailedSyncAtOpenStopsWrites(t *testing.T) {
	dir := t.TempDir()
	q := sendNAndClose(t, dir, "t", 20, 20)
	loseTail(t, dir, q, 2, 20) // Open raises the queue's end, and stores the range

	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	fs := faultstore.New(st)
	fs.FailSyncs(1) // the sync of the lost ranges
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	defer func() { _ = e.Close() }() // its final fsync succeeds or not
	require.Equal(t, int64(1), fs.SyncFailures(), "the open's fsync failed")

	_, err = e.Append(ctxT(t), &equeue.AppendRequest{Topic: "t", Messages: msgs("after the failed fsync")})
	require.ErrorIs(t, err, equeue.ErrStoreFailed, "no later fsync vouches for a send")
	require.ErrorIs(t, e.StoreFailure(), faultstore.ErrInjected)
}
