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

// TestNode_PlainCloseIsBoundedWhileAReadHoldsTheStore: nothing of the
// node's engine is held (its close finishes, and nothing is given up),
// but a read of the node's store does not return (here a snapshot stream
// whose writer does not answer, as a read on a hung disk), and the
// store's close waits for it. A plain Close must not wait for it for
// ever: it waits for the stores' close its grace at most, then returns an
// error matching equeue.ErrCloseAbandoned with Raft's listener closed,
// and the stores close in the background once the read returns. Before,
// only a close that had given an engine up bounded that wait.
func TestNode_PlainCloseIsBoundedWhileAReadHoldsTheStore(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inRead, released := make(chan struct{}), make(chan struct{})
	enterRead, release := sync.OnceFunc(func() { close(inRead) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	raftAddr := n.RaftAddr()

	sn, err := n.st.Snapshot()
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := sn.WriteTo(heldWriter{enter: enterRead, released: released})
		sn.Release()
		read <- err
	}()
	select {
	case <-inRead:
	case <-time.After(time.Minute):
		t.Fatal("the read did not reach its writer")
	}

	err = closeWithin(t, n, release, "a plain Close waits for the stores' close, held by a read")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the stores' close goes on in the background")
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	require.NoError(t, <-read, "the read finishes once the store answers")
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the stores close once the read returned, and nothing is left running")
}
