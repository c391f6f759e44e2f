package cluster

import (
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
	r := newHeldRig(t)
	n, err := Open(r.dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		engineOpenHook: r.holdAlways})
	require.NoError(t, err)
	r.opened(n)
	r.reached(r.write, "the leader did not begin to open its engine")

	r.closeIsBounded("Close waits for the reconcile loop, held in the engine's open")
	r.endsOnceReleased()
	_, err = n.Engine()
	require.Error(t, err, "an engine opened after the close is not served")
}

// TestNode_EngineOpenedAfterTheCloseBeganIsNeverServed: a one-node
// cluster takes office and its engine's open is held until the node's
// close began, then returns while the close still waits for the
// reconcile loop, with Raft still up: the open succeeds. That engine is
// closed, never served: OnEngine is never told of it and no call reaches
// it, and the close then finishes cleanly, leaving nothing running.
// (TestNode_CloseIsBoundedWhileTheLeadersEngineOpenIsHeld releases the
// open only once Raft is down, when the open itself fails.)
func TestNode_EngineOpenedAfterTheCloseBeganIsNeverServed(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inOpen, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inOpen) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	var mu sync.Mutex
	var served []*equeue.Engine
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		engineOpenHook: func() {
			enter()
			<-released
		},
		OnEngine: func(e *equeue.Engine) {
			if e != nil {
				mu.Lock()
				served = append(served, e)
				mu.Unlock()
			}
		}})
	require.NoError(t, err)
	select {
	case <-inOpen:
	case <-time.After(time.Minute):
		t.Fatal("the leader did not begin to open its engine")
	}

	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	require.Eventually(t, func() bool {
		select {
		case <-n.closing:
			return true
		default:
			return false
		}
	}, time.Minute, time.Millisecond, "the close began")
	release()

	var cerr error
	select {
	case cerr = <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return once the open returned")
	}
	mu.Lock()
	require.Empty(t, served, "OnEngine is never told of an engine opened after the close began")
	mu.Unlock()
	_, err = n.Engine()
	require.ErrorIs(t, err, equeue.ErrNotLeader, "no call reaches it")
	require.NoError(t, cerr, "the close finished: the engine opened after it began was closed")
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond)
}
