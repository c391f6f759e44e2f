package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// heldFirstIndexLog is a Raft log store whose FirstIndex waits until
// released while held is set (a disk that does not answer its reads).
type heldFirstIndexLog struct {
	raft.LogStore
	held     atomic.Bool
	shift    atomic.Uint64 // added to the first index read
	enter    func()
	released <-chan struct{}
}

func (l *heldFirstIndexLog) FirstIndex() (uint64, error) {
	if l.held.Load() {
		l.enter()
		<-l.released
	}
	first, err := l.LogStore.FirstIndex()
	return first + l.shift.Load(), err
}

// TestNode_StatusDoesNotWaitForAHeldLogStore: the node's Raft log store
// does not answer a read of its first index (a hung disk). Status must
// not wait for it: it answers, with the first index it last read, and
// reads it again once the store answers (here the store then reports a
// first index moved on, as after a compaction). Before, Status read the log
// store's first index on every call and waited for it for ever.
func TestNode_StatusDoesNotWaitForAHeldLogStore(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	inRead, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inRead) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	var logs *heldFirstIndexLog
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		logStoreHook: func(s raft.LogStore) raft.LogStore {
			logs = &heldFirstIndexLog{LogStore: s, enter: enter, released: released}
			return logs
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	before := n.Status()
	require.NotZero(t, before.FirstLogIndex, "the log's first index is read")

	logs.held.Store(true)
	got := make(chan Status, 1)
	go func() { got <- n.Status() }()
	var s Status
	select {
	case s = <-got:
	case <-time.After(time.Minute):
		release()
		t.Fatalf("Status waits for the log store's first index (it returned %+v once released)", <-got)
	}
	select {
	case <-inRead:
	default:
		t.Fatal("Status did not ask the log store for its first index")
	}
	require.Equal(t, before.FirstLogIndex, s.FirstLogIndex, "the first index last read")
	require.Equal(t, raft.Leader.String(), s.State, "the rest of the status is answered")
	require.Equal(t, before.FirstLogIndex, n.Status().FirstLogIndex, "a later Status answers alike")

	logs.shift.Store(10)
	logs.held.Store(false)
	release()
	require.Eventually(t, func() bool { return n.Status().FirstLogIndex == before.FirstLogIndex+10 }, time.Minute, 10*time.Millisecond,
		"Status reads the first index again once the store answers")
	require.NoError(t, n.Close())
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the held read ends once the store answers")
}
