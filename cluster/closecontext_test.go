package cluster_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// abandonedOnAHeldWrite opens a one-node cluster whose store hook (set by
// setHook: the FSM's write or the leader store's admission) holds a write
// that does not return until release, sends an append that reaches it,
// and closes the node with a CloseContext whose context is then cancelled:
// that call must return equeue.ErrCloseAbandoned with the context's error
// while the close goes on. sent has the append's outcome once released.
func abandonedOnAHeldWrite(t *testing.T, setHook func(*cluster.Options, func(*store.Batch) error), where string) (c *testCluster, n *cluster.Node, release func(), sent <-chan error) {
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	var entered sync.Once
	release = sync.OnceFunc(func() { close(released) })
	c = newCluster(t, 1, func(o *cluster.Options) {
		setHook(o, func(b *store.Batch) error {
			if held.Load() && len(b.Entries) > 0 {
				entered.Do(func() { close(inWrite) })
				<-released
			}
			return nil
		})
	})
	t.Cleanup(release) // before the cluster's close
	c.createTopic(t, "t", 1)
	n = c.waitLeader()
	ctx := context.Background()

	held.Store(true)
	out := make(chan error, 1)
	go func() {
		_, err := n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
		out <- err
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatalf("the append did not reach the %s", where)
	}

	closeCtx, cancelClose := context.WithCancel(ctx)
	defer cancelClose()
	closed := make(chan error, 1)
	go func() { closed <- n.CloseContext(closeCtx) }()
	eventually(t, time.Minute, func() error {
		if _, err := n.Route(ctx, "t"); err == nil {
			return assert.AnError
		}
		return nil
	})
	cancelClose()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		release()
		t.Fatalf("CloseContext waits for the held %s after its context ended (it returned %v)", where, <-closed)
	}
	return c, n, release, out
}

// TestNode_CloseContextReturnsWhenItsContextEndsOnAHeldStore: the leader's
// FSM waits in a write to its store that does not return (a hung disk),
// and the node is closed with CloseContext. When the close's context ends,
// CloseContext returns at once with equeue.ErrCloseAbandoned and the
// context's error, while the close goes on: another CloseContext whose
// context ended is abandoned too. Once the store answers, the close
// finishes: Close returns its result, and so does CloseContext whatever
// its context. Before, the node had only Close, which waited for the
// store for ever.
func TestNode_CloseContextReturnsWhenItsContextEndsOnAHeldStore(t *testing.T) {
	_, n, release, sent := abandonedOnAHeldWrite(t, cluster.SetFSMWriteHook, "store")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err := n.CloseContext(ended)
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the close goes on in the background")
	require.ErrorIs(t, err, context.Canceled)

	release()
	<-sent // its outcome is the append's concern, not the close's
	closeErr := n.Close()
	assert.NoError(t, closeErr, "the close finishes once the store answers; Close returns its result")
	assert.Equal(t, closeErr, n.CloseContext(ended), "a finished close is returned, whatever the context")
	assert.NoError(t, n.CloseContext(context.Background()))
}

// TestNode_AbandonedCloseStillReleasesRaftOnAHeldEngine: the leader's
// engine waits in its store's admission of a write that does not return
// (a hung disk under the store's free-space check), and the node is closed
// with CloseContext, whose context ends. Once the close is abandoned, the
// node gives its engine's close up too and goes on: Raft is shut down and
// its address released, and a later Close returns the node's result,
// which says its engine's close was abandoned. Before, the node's close
// waited in the engine's close for ever, holding Raft, its transport and
// its listener, and a later Close never returned.
func TestNode_AbandonedCloseStillReleasesRaftOnAHeldEngine(t *testing.T) {
	c, n, release, sent := abandonedOnAHeldWrite(t, cluster.SetAdmitHook, "store's admission")
	raftAddr := n.RaftAddr()

	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	var err error
	select {
	case err = <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the node's close waits in its engine's close, on the held store, after it was abandoned")
	}
	c.nodes[0] = nil // closed here, with its result checked here
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close was given up")
	assert.Equal(t, err, n.CloseContext(context.Background()), "a finished close is returned")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	<-sent // its outcome is the append's concern, not the close's
}
