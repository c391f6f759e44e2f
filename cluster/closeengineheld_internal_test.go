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

// TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld: the leader's
// engine has a write held in its store (the admission of a write does
// not return, as on a hung disk) when the node is closed with a plain
// Close, no context. The engine's close waits for that write; Close
// waits for it a grace at most, as for Raft's shutdown, then returns an
// error matching equeue.ErrCloseAbandoned with Raft's listener closed.
// Once the store answers, the engine's close and the stores' close finish
// in the background: the directory is free again and nothing is left
// running. Before, only a CloseContext whose context ended bounded the
// wait: a plain Close waited for the store for ever.
func TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		admitHook: func(b *store.Batch) error {
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
		t.Fatal("the append did not reach the store's admission")
	}

	err = closeWithin(t, n, release, "a plain Close waits for the engine's close, held by its store")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close goes on in the background")
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	<-sent // its outcome is the append's concern, not the close's
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the engine's close ends once its store answers")
}
