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

// closeWithin closes n with a plain Close and returns its result; it
// fails t, after calling release (so the close can end), when Close did
// not return within a minute.
func closeWithin(t *testing.T, n *Node, release func(), what string) error {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		return err
	case <-time.After(time.Minute):
		release()
		t.Fatalf("%s (Close returned %v once released)", what, <-closed)
		return nil
	}
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

// TestNode_CloseIsBoundedWhileTheFullDiskRetryWaitsForAHeldFSM: the FSM
// of a one-node cluster waits in a write to its store that does not
// return (a hung disk), and the node's timed full-disk retry, which
// shares the FSM's lock, waits behind it. Close gives Raft's shutdown up
// after its grace; it must not wait for the retry's goroutine for ever
// either: it returns an error matching equeue.ErrCloseAbandoned, with
// Raft's listener closed, and the stores close once the store answers.
// Before, Close waited for that goroutine, and so for the store, for
// ever, before it even began Raft's shutdown.
func TestNode_CloseIsBoundedWhileTheFullDiskRetryWaitsForAHeldFSM(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, released, retrying := make(chan struct{}), make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	retried := sync.OnceFunc(func() { close(retrying) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		fullDiskRetry: time.Millisecond,
		fullDiskRetryHook: func() {
			// The first retry waits until the FSM holds its lock in the
			// held write, and then waits for that lock: a retry that ran
			// and ended before would prove nothing.
			select {
			case <-inWrite:
				retried()
			case <-released:
			}
		},
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
	for _, step := range []struct {
		ch   chan struct{}
		what string
	}{{inWrite, "the append did not reach the FSM's write"}, {retrying, "the full-disk retry did not run while the FSM was held"}} {
		select {
		case <-step.ch:
		case <-time.After(time.Minute):
			t.Fatal(step.what)
		}
	}
	// The retry's goroutine now waits for the FSM's lock, held by the write.

	err = closeWithin(t, n, release, "Close waits for the full-disk retry, held behind the FSM's write")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	<-sent
	storeFreed(t, dir)
	goleak.VerifyNone(t, leaks)
}

// TestNode_CloseIsBoundedWhileAFollowersReclaimIsHeld: a node that does
// not lead reclaims its store, and the reclaim does not return (a hung
// disk). Close must not wait for it for ever: it returns an error
// matching equeue.ErrCloseAbandoned once its grace passed, with Raft shut
// down and its listener closed, and the stores close once the reclaim
// returns. Before, Close waited for the reclaim's goroutine before it
// began Raft's shutdown, for ever.
func TestNode_CloseIsBoundedWhileAFollowersReclaimIsHeld(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inReclaim, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inReclaim) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	// Not bootstrapped: the node waits to be added, leading nothing.
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0",
		followerReclaim: time.Millisecond,
		reclaimHook: func() {
			enter()
			<-released
		}})
	require.NoError(t, err)
	raftAddr := n.RaftAddr()
	select {
	case <-inReclaim:
	case <-time.After(time.Minute):
		t.Fatal("the node did not reclaim its store")
	}

	err = closeWithin(t, n, release, "Close waits for the held reclaim")
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "a later Close returns the same result")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	storeFreed(t, dir)
	goleak.VerifyNone(t, leaks)
}
