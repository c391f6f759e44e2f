package cluster

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestNode_CloseIsBoundedWhileTheFSMsWriteIsHeld: the FSM of a one-node
// cluster waits in a write to its store that does not return (a hung
// disk) when the node is closed with a plain Close. Raft's shutdown waits
// for the FSM's goroutine, so it cannot finish; Close waits for it only
// a grace, then returns an error matching equeue.ErrCloseAbandoned, with
// Raft's transport and listener closed. Once the store answers, Raft's
// shutdown finishes in the background and the stores close: the
// directory is free again, and nothing is left running. Before, Close
// waited for Raft's shutdown, and so for the store, for ever.
func TestNode_CloseIsBoundedWhileTheFSMsWriteIsHeld(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		fsmWriteHook: func(b *store.Batch) error {
			if held.Load() && len(b.Entries) > 0 {
				enter()
				<-released
			}
			return nil
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
	raftAddr := n.RaftAddr()

	held.Store(true)
	sent := make(chan error, 1)
	go func() {
		_, err := n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
		sent <- err
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the append did not reach the FSM's write")
	}

	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err = <-closed:
	case <-time.After(time.Minute):
		release()
		t.Fatalf("Close waits for Raft's shutdown, held by the FSM's write (it returned %v once released)", <-closed)
	}
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "Raft's shutdown and the stores' close go on in the background")
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	<-sent // its outcome is the append's concern, not the close's
	// The stores close once Raft's shutdown finished: the store's
	// directory is no longer locked.
	require.Eventually(t, func() bool {
		st, err := store.OpenBadger(filepath.Join(dir, engineDir), nil)
		if err != nil {
			return false
		}
		require.NoError(t, st.Close())
		return true
	}, time.Minute, 10*time.Millisecond, "the stores are closed once Raft's shutdown finished")
	goleak.VerifyNone(t, leaks)
}
