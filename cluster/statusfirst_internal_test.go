package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// heldFirstIndexLog is a Raft log store whose FirstIndex holds (hold)
// while held is set, as a disk that does not answer its reads.
type heldFirstIndexLog struct {
	raft.LogStore
	held  atomic.Bool
	shift atomic.Uint64 // added to the first index read
	hold  func()
}

func (l *heldFirstIndexLog) FirstIndex() (uint64, error) {
	if l.held.Load() {
		l.hold()
	}
	first, err := l.LogStore.FirstIndex()
	return first + l.shift.Load(), err
}

// TestNode_StatusDoesNotWaitForAHeldLogStore: the node's Raft log store
// does not answer a read of its first index (a hung disk). Status must
// not wait for it: it answers, with the first index it last read, and
// reads it again once the store answers (here the store then reports a
// first index moved on, as after a compaction). Before, Status read the
// log store's first index on every call and waited for it for ever.
func TestNode_StatusDoesNotWaitForAHeldLogStore(t *testing.T) {
	r := newHeldRig(t)
	var logs *heldFirstIndexLog
	n := r.open(&Options{logStoreHook: func(s raft.LogStore) raft.LogStore {
		logs = &heldFirstIndexLog{LogStore: s, hold: r.holdAlways}
		return logs
	}})
	before := n.Status()
	require.NotZero(t, before.FirstLogIndex, "the log's first index is read")

	logs.held.Store(true)
	got := make(chan Status, 1)
	go func() { got <- n.Status() }()
	var s Status
	select {
	case s = <-got:
	case <-time.After(time.Minute):
		r.release()
		t.Fatalf("Status waits for the log store's first index (it returned %+v once released)", <-got)
	}
	// Raft reads the log's first index too (its log metrics, every few
	// seconds), and may be the one held: the read Status started must be
	// the one still on its way.
	n.first.mu.Lock()
	reading := n.first.reading != nil
	n.first.mu.Unlock()
	require.True(t, reading, "Status did not ask the log store for its first index")
	r.reached(r.write, "the log store was not asked for its first index")
	require.Equal(t, before.FirstLogIndex, s.FirstLogIndex, "the first index last read")
	require.Equal(t, raft.Leader.String(), s.State, "the rest of the status is answered")
	require.Equal(t, before.FirstLogIndex, n.Status().FirstLogIndex, "a later Status answers alike")

	logs.shift.Store(10)
	logs.held.Store(false)
	r.release()
	require.Eventually(t, func() bool { return n.Status().FirstLogIndex == before.FirstLogIndex+10 }, time.Minute, 10*time.Millisecond,
		"Status reads the first index again once the store answers")
	require.NoError(t, n.Close())
	require.Eventually(t, func() bool { return goleak.Find(r.leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the held read ends once the store answers")
}
