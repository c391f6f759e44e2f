package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestNode_EngineCloseGraceStartsWhenTheCloseIsGivenUp: the reconcile loop
// ends a tenure (a failed write fences it) and waits in the engine's
// close, which waits on a write held in the store's admission, for longer
// than engineCloseGrace. A CloseContext whose context ends then gives the
// node's close up; the node waits for the engine's close a little more,
// as documented: engineCloseGrace from then, not from when that close
// began. The store answers at once, the engine's close finishes within
// that grace, and the node's result does not say it was given up. Before,
// the grace was counted from the start of the engine's close, long past:
// the node gave that close up at once.
func TestNode_EngineCloseGraceStartsWhenTheCloseIsGivenUp(t *testing.T) {
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
	go func() { // its outcome is the append's concern, not the close's
		_, _ = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the append did not reach the store's admission")
	}
	rs.fence(errors.New("test: a write failed")) // the tenure ends
	require.Eventually(t, func() bool { _, err := n.Engine(); return err != nil }, 30*time.Second, 10*time.Millisecond,
		"the reconcile loop stops serving, and waits in the engine's close")
	time.Sleep(engineCloseGrace) // the engine's close has been waiting for longer than the grace

	closeCtx, cancelClose := context.WithCancel(ctx)
	cancelClose()
	require.ErrorIs(t, n.CloseContext(closeCtx), equeue.ErrCloseAbandoned)
	release() // the store answers at once: the engine's close finishes within its grace
	err = n.Close()
	require.NotErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close, which finished within its grace, was not given up")
	require.NoError(t, err)
}
