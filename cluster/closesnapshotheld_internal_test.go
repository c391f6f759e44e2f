package cluster

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

// TestNode_CloseIsBoundedWhileASnapshotsPersistIsHeld: a one-node
// cluster takes a snapshot, and its Persist, on Raft's snapshot goroutine
// rather than the FSM's, does not return (the store does not answer its
// reads). Raft's shutdown waits for that goroutine as for the FSM's: a
// plain Close waits for it its grace at most, then returns an error
// matching equeue.ErrCloseAbandoned with Raft's listener closed, and once
// the store answers the snapshot ends, the stores close and nothing is
// left running. It checks that the bound on a held Raft shutdown covers
// a held snapshot too (it held before this test was written).
func TestNode_CloseIsBoundedWhileASnapshotsPersistIsHeld(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inPersist, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inPersist) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		persistHook: func() {
			enter()
			<-released
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
	_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	raftAddr := n.RaftAddr()

	snapped := make(chan error, 1)
	go func() { snapped <- n.raft.Snapshot().Error() }()
	select {
	case <-inPersist:
	case <-time.After(time.Minute):
		t.Fatal("the snapshot did not reach its Persist")
	}

	err = closeWithin(t, n, release, "Close waits for Raft's shutdown, held by the snapshot's Persist")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "Raft's shutdown and the stores' close go on in the background")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	<-snapped // its outcome is the snapshot's concern, not the close's
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond)
}
