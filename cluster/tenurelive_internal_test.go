package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// heldReconcile parks the node's reconcile passes while armed: held
// receives once a pass is parked; release lets every pass on.
type heldReconcile struct {
	passes   atomic.Uint64 // reconcile passes begun
	armed    atomic.Bool
	held     chan struct{}
	release  chan struct{}
	released sync.Once
}

func newHeldReconcile() *heldReconcile {
	return &heldReconcile{held: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *heldReconcile) hook() {
	h.passes.Add(1)
	if !h.armed.Load() {
		return
	}
	select {
	case h.held <- struct{}{}:
	default:
	}
	<-h.release
}

func (h *heldReconcile) letGo() { h.released.Do(func() { close(h.release) }) }

// openHeldLeader opens a single-node cluster whose reconcile passes h can
// hold, and waits until it serves.
func openHeldLeader(t *testing.T, h *heldReconcile) *Node {
	t.Helper()
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, reconcileHook: h.hook})
	require.NoError(t, err)
	t.Cleanup(func() {
		h.letGo()
		assert.NoError(t, n.Close())
	})
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	return n
}

// holdReconcile parks the node's next reconcile pass and returns the
// open engine's replicated store: until h lets go, the engine stays open
// whatever becomes of its tenure.
func holdReconcile(t *testing.T, n *Node, h *heldReconcile) *replicatedStore {
	t.Helper()
	h.armed.Store(true)
	n.wake()
	select {
	case <-h.held:
	case <-time.After(20 * time.Second):
		t.Fatal("reconcile was not held")
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	require.NotNil(t, n.engine, "the engine is still open")
	return n.rstore
}

func requireNotLeader(t *testing.T, n *Node) {
	t.Helper()
	var nl *NotLeaderError
	_, err := n.Engine()
	require.ErrorAs(t, err, &nl, "Engine")
	_, err = n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.ErrorAs(t, err, &nl, "Append")
	_, err = n.Pull(context.Background(), &equeue.PullRequest{Topic: "t"})
	require.ErrorAs(t, err, &nl, "Pull")
	st := n.Status()
	assert.False(t, st.Serving, "Status.Serving of an ended tenure")
	assert.False(t, st.LeaseHeld, "Status.LeaseHeld of an ended tenure")
}

// An engine whose tenure was fenced serves no call, though reconcile has
// not closed it yet: each is refused as not leading, before the engine
// does anything.
func TestNode_EngineOfAFencedTenureIsNotServed(t *testing.T) {
	h := newHeldReconcile()
	n := openHeldLeader(t, h)
	rs := holdReconcile(t, n, h)

	rs.fence(errFenced)
	requireNotLeader(t, n)
}

// An engine whose tenure started in an earlier Raft term (a node
// re-elected before reconcile saw the new term) serves no call either.
func TestNode_EngineOfAnEarlierTermIsNotServed(t *testing.T) {
	h := newHeldReconcile()
	n := openHeldLeader(t, h)
	rs := holdReconcile(t, n, h)

	// As if Raft had moved on a term since the tenure started: reconcile,
	// its only other reader, is parked.
	n.mu.Lock()
	rs.term--
	n.mu.Unlock()
	requireNotLeader(t, n)

	n.mu.Lock()
	rs.term++
	n.mu.Unlock()
	_, err := n.Engine()
	require.NoError(t, err, "the tenure of the current term serves")
	assert.True(t, n.Status().Serving, "Status.Serving of the current tenure")
}

// Tenures rise within a term: a node that started every tenure a term
// allows (a failed start counts) starts no more in it, rather than wrap
// its count and start a lower tenure (whose group epochs would go down);
// it leads without serving, and tries to hand its leadership over. In a
// later term its count starts again.
func TestNode_TenuresOfATermDoNotWrap(t *testing.T) {
	h := newHeldReconcile()
	n := openHeldLeader(t, h)
	holdReconcile(t, n, h)
	term := n.raft.CurrentTerm()

	// reconcile is parked: the test stands in for its goroutine.
	n.stopEngine(true)
	n.seq, n.seqTerm = maxTenuresPerTerm-1, term
	require.NoError(t, n.startTenure())
	last := TenureOf(n)
	assert.Equal(t, term<<16|maxTenuresPerTerm, last)

	n.stopEngine(true)
	require.ErrorIs(t, n.startTenure(), errTenuresSpent)
	assert.Equal(t, last, TenureOf(n), "no tenure entry was committed")

	// reconcile tries again and again, and starts nothing either (a
	// single voter has no one to hand its leadership to).
	from := h.passes.Load()
	h.armed.Store(false)
	h.letGo()
	require.Eventually(t, func() bool { n.wake(); return h.passes.Load() >= from+5 }, 20*time.Second, 10*time.Millisecond)
	require.Equal(t, term, n.raft.CurrentTerm(), "still the same term")
	assert.Equal(t, last, TenureOf(n), "no lower tenure was started")
	_, err := n.Engine()
	var nl *NotLeaderError
	require.ErrorAs(t, err, &nl)
}

// A term change starts the count of tenures again.
func TestNode_TenureCountRestartsInANewTerm(t *testing.T) {
	h := newHeldReconcile()
	n := openHeldLeader(t, h)
	holdReconcile(t, n, h)
	term := n.raft.CurrentTerm()

	n.stopEngine(true)
	n.seq, n.seqTerm = maxTenuresPerTerm, term-1
	require.NoError(t, n.startTenure())
	assert.Equal(t, term<<16|1, TenureOf(n))
	_, err := n.Engine()
	require.NoError(t, err)
}
