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

// heldRig is a one-node cluster whose store (through a hook of the
// node's: the leader's admission, the FSM's write, a snapshot's
// Persist...) holds, as a disk that does not answer, until the rig
// releases it; and the checks the tests of a close on such a disk share:
// Close returns within its bound, and once the store answers the rest of
// the close ends, leaving the directory free and nothing running.
type heldRig struct {
	t        *testing.T
	leaks    goleak.Option
	released chan struct{}
	release  func() // lets every hold of the rig go; idempotent
	// held makes the hooks of heldBatch hold; the others hold always.
	held atomic.Bool
	// write is the hold the rig's hooks use.
	write    *holdPoint
	dir      string
	n        *Node
	raftAddr string
}

// holdPoint is one place a rig holds: entered is closed once something
// held there, which waits until the rig releases it.
type holdPoint struct {
	entered  chan struct{}
	enter    func()
	released <-chan struct{}
}

// hold marks the point entered and waits until the rig releases it.
func (p *holdPoint) hold() {
	p.enter()
	<-p.released
}

// newHeldRig returns a rig, its goroutine-leak baseline taken now, its
// holds released when t ends.
func newHeldRig(t *testing.T) *heldRig {
	r := &heldRig{t: t, leaks: goleak.IgnoreCurrent(), released: make(chan struct{}), dir: t.TempDir()}
	r.release = sync.OnceFunc(func() { close(r.released) })
	t.Cleanup(r.release)
	r.write = r.point()
	return r
}

// point returns a new hold point of the rig.
func (r *heldRig) point() *holdPoint {
	entered := make(chan struct{})
	return &holdPoint{entered: entered, enter: sync.OnceFunc(func() { close(entered) }), released: r.released}
}

// heldBatch is a store hook that holds at the rig's write point while
// held is set: on every batch, or (records) on batches of records only.
func (r *heldRig) heldBatch(records bool) func(*store.Batch) error {
	return func(b *store.Batch) error {
		if r.held.Load() && (!records || len(b.Entries) > 0) {
			r.write.hold()
		}
		return nil
	}
}

// holdAlways is a hook that holds at the rig's write point every time.
func (r *heldRig) holdAlways() { r.write.hold() }

// open opens the rig's node with o (its hooks), bootstrapped alone, and
// waits until it serves with topic "t" of one queue created.
func (r *heldRig) open(o *Options) *Node {
	r.t.Helper()
	o.ID, o.RaftAddr, o.Bootstrap = "n1", "127.0.0.1:0", true
	n, err := Open(r.dir, o)
	require.NoError(r.t, err)
	r.opened(n)
	require.Eventually(r.t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(r.t, n.CreateTopic(context.Background(), "t", 1))
	return n
}

// opened makes n, opened by the test in the rig's directory, the rig's
// node.
func (r *heldRig) opened(n *Node) { r.n, r.raftAddr = n, n.RaftAddr() }

// reached waits until something held at p, failing the test with what
// when nothing did within a minute.
func (r *heldRig) reached(p *holdPoint, what string) {
	r.t.Helper()
	select {
	case <-p.entered:
	case <-time.After(time.Minute):
		r.t.Fatal(what)
	}
}

// appendHeld sets held and appends a message whose write holds at the
// rig's write point (what: the failure when it does not get there); the
// channel has the append's result once the store answered.
func (r *heldRig) appendHeld(what string) <-chan error {
	r.t.Helper()
	r.held.Store(true)
	sent := make(chan error, 1)
	go func() {
		_, err := r.n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
		sent <- err
	}()
	r.reached(r.write, what)
	return sent
}

// startClose starts a plain Close of the rig's node; the channel has its
// result.
func (r *heldRig) startClose() <-chan error {
	closed := make(chan error, 1)
	go func() { closed <- r.n.Close() }()
	return closed
}

// closeIsBounded is closeBounded of a Close it starts now.
func (r *heldRig) closeIsBounded(what string) error {
	r.t.Helper()
	return r.closeBounded(r.startClose(), what)
}

// closeBounded checks the plain Close whose result closed has, made while
// the store holds: it returns within a minute (else the test fails with
// what, and the result the close had once the rig released the store),
// with an error matching equeue.ErrCloseAbandoned, which a later Close
// returns too, and Raft's listener closed. It returns that error.
func (r *heldRig) closeBounded(closed <-chan error, what string) error {
	r.t.Helper()
	var err error
	select {
	case err = <-closed:
	case <-time.After(time.Minute):
		r.release()
		r.t.Fatalf("%s (Close returned %v once released)", what, <-closed)
	}
	require.ErrorIs(r.t, err, equeue.ErrCloseAbandoned, "what the store holds goes on in the background")
	require.ErrorIs(r.t, r.n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", r.raftAddr)
	require.NoError(r.t, lerr, "Raft's listener is closed")
	require.NoError(r.t, ln.Close())
	return err
}

// endsOnceReleased releases the store and checks that the rest of the
// close ends: each of ended has a value (what the store held returned),
// the node's store is closed (its directory no longer locked), and no
// goroutine is left running.
func (r *heldRig) endsOnceReleased(ended ...<-chan error) {
	r.t.Helper()
	r.release()
	for _, ch := range ended {
		<-ch // their outcome is their own concern, not the close's
	}
	storeFreed(r.t, r.dir)
	require.Eventually(r.t, func() bool { return goleak.Find(r.leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the close ends once the store answers, and nothing is left running")
}

// storeFreed waits until the node's store in dir is closed: its directory
// is no longer locked.
func storeFreed(t *testing.T, dir string) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := store.OpenBadger(filepath.Join(dir, engineDir), nil)
		if err != nil {
			return false
		}
		require.NoError(t, st.Close())
		return true
	}, time.Minute, 10*time.Millisecond, "the stores are closed once what used them returned")
}
