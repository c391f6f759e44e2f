package cluster

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

// TestNode_CloseIsBoundedWhileTheLeadersEngineOpenIsHeld: a one-node
// cluster takes office and opens its engine, and the open does not
// return (its store does not answer, as on a hung disk): the reconcile
// loop waits in it. A plain Close waits for the loop a grace at most,
// then shuts Raft down, closes its listener and returns an error matching
// equeue.ErrCloseAbandoned. Once the store answers, the engine that
// opened meanwhile is closed, not served, and the stores close: the
// directory is free again and nothing is left running. Before, Close
// waited for the loop, and so for the store, for ever.
func TestNode_CloseIsBoundedWhileTheLeadersEngineOpenIsHeld(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inOpen, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inOpen) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		engineOpenHook: func() {
			enter()
			<-released
		}})
	require.NoError(t, err)
	select {
	case <-inOpen:
	case <-time.After(time.Minute):
		t.Fatal("the leader did not begin to open its engine")
	}
	raftAddr := n.RaftAddr()

	err = closeWithin(t, n, release, "Close waits for the reconcile loop, held in the engine's open")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's open and the stores' close go on in the background")
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the engine opened after the close is closed, and the loop ends")
	_, err = n.Engine()
	require.Error(t, err, "an engine opened after the close is not served")
}
