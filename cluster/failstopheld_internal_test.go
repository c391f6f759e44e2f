package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

// errLogDiskGone is what a breakableLog's writes fail with once broken.
var errLogDiskGone = errors.New("test: the raft log's disk is gone")

// breakableLog is a Raft log store whose writes fail once broken is set.
type breakableLog struct {
	raft.LogStore
	broken atomic.Bool
}

func (l *breakableLog) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

func (l *breakableLog) StoreLogs(es []*raft.Log) error {
	if l.broken.Load() {
		return errLogDiskGone
	}
	return l.LogStore.StoreLogs(es)
}

// withinAMinute runs f and returns its error, failing t (after calling
// release, so f can end) when f did not return within a minute.
func withinAMinute(t *testing.T, release func(), what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		release()
		t.Fatalf("%s (it returned %v once released)", what, <-done)
		return nil
	}
}

// TestNode_FailStopWithAHeldFSMDoesNotHoldTheNodesCalls: the FSM of a
// one-node cluster waits in a write to its store that does not return (a
// hung disk) when the node's Raft log fails a write: the node leaves the
// cluster (failStop), and Raft's shutdown waits for the FSM. The node's
// calls do not wait for that shutdown: the write whose log write failed
// ends with an unknown outcome, Status answers and reports the failure,
// the engine stops serving and a later write is refused as not the
// leader's, without a Close. Once the store
// answers, Close finishes (reporting the log's failure) and nothing is
// left running. Before, failStop
// waited for Raft's shutdown, and so for the store, for ever before it
// stopped the engine: the writes on their way waited as long.
func TestNode_FailStopWithAHeldFSMDoesNotHoldTheNodesCalls(t *testing.T) {
	r := newHeldRig(t)
	var blog *breakableLog
	n := r.open(&Options{
		logStoreHook: func(s raft.LogStore) raft.LogStore { blog = &breakableLog{LogStore: s}; return blog },
		fsmWriteHook: r.heldBatch(true)})
	appendOne := func(body string) error {
		_, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}})
		return err
	}
	first := r.appendHeld("the append did not reach the FSM's write")

	blog.broken.Store(true)
	err := withinAMinute(t, r.release, "a write whose log write failed waits for the held FSM", func() error { return appendOne("log fails") })
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "its entry may be in a peer's log")
	require.Eventually(t, func() bool { return n.Status().Failure != "" }, time.Minute, 10*time.Millisecond,
		"the node leaves the cluster for its failed log")
	require.Eventually(t, func() bool { _, err := n.Engine(); return err != nil }, time.Minute, 10*time.Millisecond,
		"the engine stops serving though Raft's shutdown waits for the FSM")
	err = withinAMinute(t, r.release, "a later write waits for the held FSM", func() error { return appendOne("later") })
	require.ErrorIs(t, err, equeue.ErrNotLeader, "the node serves no more")

	r.release()
	<-first // its outcome is the append's concern
	err = withinAMinute(t, func() {}, "Close after the store answered", n.Close)
	require.NotErrorIs(t, err, equeue.ErrCloseAbandoned, "Raft's shutdown finished once the store answered")
	require.ErrorIs(t, err, errLogDiskGone, "Close reports the log's failure")
	require.Eventually(t, func() bool { return goleak.Find(r.leaks) == nil }, time.Minute, 50*time.Millisecond)
}
