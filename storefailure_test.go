package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// A durable send written while a background fsync (SyncInterval's, here
// started by one producer's policy on a SyncAlways engine) runs and fails
// may have been swept into that fsync: its own fsync, made beside it,
// proves nothing. It must be answered ErrIndeterminate, not acknowledged,
// and not shown to readers. It used to be acknowledged as soon as its own
// fsync returned, before the failing one ended.
func TestStoreFailure_SendBesideAFailingIntervalSyncIsUnknown(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	g := newSyncGate(t, r.FS)
	g.arm()
	every := equeue.SyncInterval(time.Millisecond)
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("interval"), Sync: &every})
	require.NoError(t, err)
	g.waitEntered(t) // the background fsync runs, and will fail

	writes := r.FS.Writes()
	b := make(chan error, 1)
	go func() {
		_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("durable")})
		b <- err
	}()
	eventually(t, waitLong, func() bool { return r.FS.Writes() > writes },
		"the durable send is written while the background fsync runs")
	select {
	case err := <-b:
		t.Fatalf("the durable send was answered before the fsync running beside it ended: %v", err)
	default:
	}
	g.release(faultstore.ErrInjected)
	require.ErrorIs(t, <-b, equeue.ErrIndeterminate, "written while a failed fsync ran")
	require.ErrorIs(t, r.E.StoreFailure(), faultstore.ErrInjected)
	assert.Equal(t, []string{"interval"}, queueBodies(t, r.E, "t", 0), "nothing of unknown outcome is shown")
}
