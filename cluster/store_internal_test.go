package cluster

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// soloRaft is a one-voter Raft on in-memory log and transport, applying to
// an FSM over a Badger store, with a tenure started: what a leader's
// replicatedStore runs on.
func soloRaft(t *testing.T) (*replicatedStore, *raft.Raft, *store.Badger) {
	t.Helper()
	st, err := store.OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	f, err := newFSM(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.LogOutput = io.Discard
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	addr, trans := raft.NewInmemTransport("")
	logs := raft.NewInmemStore()
	r, err := raft.NewRaft(conf, f, logs, logs, raft.NewInmemSnapshotStore(), trans)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = r.Shutdown().Error() // a test may have shut it down already
		require.NoError(t, st.Close())
	})
	require.NoError(t, r.BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: addr}}}).Error())
	select {
	case <-r.LeaderCh():
	case <-time.After(10 * time.Second):
		t.Fatal("no leader")
	}
	require.NoError(t, r.Apply(encodeTenure(1, "n1", "c1", ""), time.Second).Error())
	rs := newReplicatedStore(r, st, r.CurrentTerm(), 1, "", time.Second, nil)
	return rs, r, st
}

func oneRecord(off uint64) *store.Batch {
	return &store.Batch{Entries: []store.Entry{{Queue: store.QueueID{Topic: 1}, Offset: off, Value: []byte("v")}}}
}

// Several writes are handed to Raft before the first one's outcome is
// known; they are stored in order and every wait reports success.
func TestReplicatedStore_WriteAsyncKeepsSeveralInFlight(t *testing.T) {
	rs, _, st := soloRaft(t)
	var waits []func() error
	for off := range uint64(32) {
		waits = append(waits, rs.WriteAsync(oneRecord(off)))
	}
	for i, w := range waits {
		require.NoError(t, w(), "write %d", i)
	}
	first, next, ok, err := st.Bounds(store.QueueID{Topic: 1})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(0), first)
	assert.Equal(t, uint64(32), next)
}

// A write whose tenure is fenced while it replicates is not acknowledged
// even though Raft applied it: an entry before it may have failed. Every
// later write is refused as not stored.
func TestReplicatedStore_NoSuccessAfterFence(t *testing.T) {
	rs, _, _ := soloRaft(t)
	wait := rs.WriteAsync(oneRecord(0))
	cause := errors.New("an earlier entry failed")
	rs.fence(cause)
	err := wait()
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	assert.ErrorIs(t, err, cause)
	err = rs.WriteAsync(oneRecord(1))()
	require.ErrorIs(t, err, equeue.ErrNotLeader)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate)
}

// When Raft refuses an entry at once (it could not queue it), the tenure
// is fenced before WriteAsync returns, so no later entry can enter the log
// behind the missing one; the refused write is reported not stored.
func TestReplicatedStore_RefusedEntryFencesAtOnce(t *testing.T) {
	rs, r, _ := soloRaft(t)
	require.NoError(t, r.Shutdown().Error())
	wait := rs.WriteAsync(oneRecord(0))
	assert.True(t, rs.isFenced(), "fenced before the wait")
	err := wait()
	require.ErrorIs(t, err, equeue.ErrNotLeader)
	assert.ErrorIs(t, err, raft.ErrRaftShutdown)
}
