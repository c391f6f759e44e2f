package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestNode_CloseWhileReconcileWaitsOnAnEngineThatCannotCommit: a serving
// leader whose voters start refusing its entries has a write on its way
// that is never committed, and its tenure ends while it still leads (a
// failed write fences it): the reconcile loop stops serving and waits in
// the engine's close for that write. A plain Close then returns all the
// same, and the write ends with an unknown outcome, as when Close itself
// stops the engine. Before, Close waited for the reconcile loop, which
// waited for the write for ever: only Close stopped the waits for writes
// a leader cannot commit, and only for an engine it closed itself.
func TestNode_CloseWhileReconcileWaitsOnAnEngineThatCannotCommit(t *testing.T) {
	v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
	v2.accepting.Store(true)
	v3.accepting.Store(true)
	n := openWithVoters(t, v2, v3)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()

	v2.accepting.Store(false)
	v3.accepting.Store(false)
	appended := make(chan error, 1)
	go func() {
		_, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		appended <- err
	}()
	require.Eventually(t, func() bool { return v2.refused() > 0 && v3.refused() > 0 }, 30*time.Second, 10*time.Millisecond)

	rs.fence(errors.New("test: a write failed")) // the tenure ends; the node still leads
	require.Eventually(t, func() bool { _, err := n.Engine(); return err != nil }, 30*time.Second, 10*time.Millisecond,
		"the reconcile loop stops serving, and waits in the engine's close")
	require.Equal(t, raft.Leader, n.raft.State(), "still leading: the voters answer its heartbeats")

	requireCloses(t, n)
	select {
	case err := <-appended:
		require.ErrorIs(t, err, equeue.ErrIndeterminate)
	case <-time.After(60 * time.Second):
		t.Fatal("the write on its way did not end")
	}
}

// TestNode_CloseContextEndsAReconcileWaitingOnAHeldEngine: the leader's
// engine waits in its store's admission of a write that does not return
// (a hung disk), and its tenure ends (a failed write fences it): the
// reconcile loop stops serving and waits in the engine's close, which
// waits for the store. A plain Close gives it up only after
// engineCloseBound (TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld);
// a CloseContext whose context ends
// gives the close up, and the reconcile loop then gives the engine's close
// up and ends: the node's close finishes (a later Close returns) with a
// result saying the engine's close was given up.
func TestNode_CloseContextEndsAReconcileWaitingOnAHeldEngine(t *testing.T) {
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
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
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()

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
	rs.fence(errors.New("test: a write failed")) // the tenure ends
	require.Eventually(t, func() bool { _, err := n.Engine(); return err != nil }, 30*time.Second, 10*time.Millisecond,
		"the reconcile loop stops serving, and waits in the engine's close")

	closeCtx, cancelClose := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- n.CloseContext(closeCtx) }()
	cancelClose()
	require.ErrorIs(t, <-closed, equeue.ErrCloseAbandoned)
	done := make(chan error, 1)
	go func() { done <- n.Close() }()
	select {
	case err := <-done:
		require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close was given up")
	case <-time.After(time.Minute):
		t.Fatal("the node's close waits for the reconcile loop, in the held engine's close, after it was abandoned")
	}

	release()
	<-sent // its outcome is the append's concern, not the close's
}
