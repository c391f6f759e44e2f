package cluster

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// heldWriter is an io.Writer whose first Write waits until released (a
// read of the store streamed somewhere that does not answer).
type heldWriter struct {
	enter    func()
	released <-chan struct{}
}

func (w heldWriter) Write(p []byte) (int, error) {
	w.enter()
	<-w.released
	return len(p), nil
}

// TestNode_PlainCloseIsBoundedWhileAGivenUpEngineHoldsTheStore: on a hung
// disk the leader engine's store does not answer its write (held in its
// admission, as in TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld)
// nor a read already in the node's store, which holds the store's read
// lock as an engine's pull on that disk would (here a snapshot stream
// whose writer does not return). Close gives the engine's close up after
// its bound, and Raft shuts down; the node's store cannot close while the
// read holds it, and the given-up engine may still be at work on it.
// A plain Close must not wait for that: it returns an error matching
// equeue.ErrCloseAbandoned with Raft's listener closed, and the stores
// close in the background once the store answers. Before, Close closed
// the stores itself after giving the engine up, and so waited for the
// store for ever.
func TestNode_PlainCloseIsBoundedWhileAGivenUpEngineHoldsTheStore(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, inRead, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
	enterWrite, enterRead := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(inRead) })
	release := sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		admitHook: func(b *store.Batch) error {
			if held.Load() && len(b.Entries) > 0 {
				enterWrite()
				<-released
			}
			return nil
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
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
	held.Store(true)
	sent := make(chan error, 1)
	go func() {
		_, err := n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
		sent <- err
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the append did not reach the store's admission")
	}

	err = closeWithin(t, n, release, "a plain Close waits for the stores' close, held by a read of the given-up engine's store")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close and the stores' close go on in the background")
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	require.NoError(t, <-read, "the read finishes once the store answers")
	<-sent // its outcome is the append's concern, not the close's
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the stores close once the read returned, and nothing is left running")
}
