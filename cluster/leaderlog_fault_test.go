package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// Faults of the leader's background log write, for the tests that cross
// it with what the engine builds on a stored write: dedup entries, delayed
// messages (leaderlog_cross_test.go) and retention trims
// (leaderlog_retention_test.go). A caller's answer — stored (nil), not
// stored (ErrNotLeader) or unknown (ErrIndeterminate) — must never be
// contradicted by what the nodes keep.

// failLog is a Raft log store that stores nothing and fails every write
// once failWith is set (a disk that stopped taking writes), and refuses a
// write holding an entry refuse picks (an entry that never reaches it).
type failLog struct {
	raft.LogStore
	failWith atomic.Pointer[error]
	refuse   atomic.Pointer[func(*raft.Log) bool]
}

func (f *failLog) StoreLogs(logs []*raft.Log) error {
	if p := f.failWith.Load(); p != nil {
		return *p
	}
	if r := f.refuse.Load(); r != nil {
		for _, l := range logs {
			if (*r)(l) {
				return errRefused
			}
		}
	}
	return f.LogStore.StoreLogs(logs)
}

func (f *failLog) StoreLog(l *raft.Log) error { return f.StoreLogs([]*raft.Log{l}) }

func (f *failLog) fail(err error) { f.failWith.Store(&err) }

// errDiskGone is the write failure the tests inject; errRefused a
// follower's refusal of an entry it must not get.
var (
	errDiskGone = errors.New("test: the disk took no more writes")
	errRefused  = errors.New("test: entry refused")
)

// faultCluster is a test cluster whose nodes' Raft logs can be held (a
// slow write) and made to fail, node by node.
type faultCluster struct {
	*testCluster
	mu    sync.Mutex
	held  map[string]*heldLog // node ID -> the log of its latest opening
	fails map[string]*failLog
}

func newFaultCluster(t *testing.T, mod func(*cluster.Options)) *faultCluster {
	fc := &faultCluster{held: map[string]*heldLog{}, fails: map[string]*failLog{}}
	fc.testCluster = newCluster(t, 3, func(o *cluster.Options) {
		if mod != nil {
			mod(o)
		}
		id := o.ID
		cluster.SetLogStoreHook(o, func(s raft.LogStore) raft.LogStore {
			f := &failLog{LogStore: s}
			h := &heldLog{LogStore: f} // held first, then failed or stored
			fc.mu.Lock()
			fc.held[id], fc.fails[id] = h, f
			fc.mu.Unlock()
			return h
		})
	})
	return fc
}

func (fc *faultCluster) logOf(n *cluster.Node) (*heldLog, *failLog) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.held[n.ID()], fc.fails[n.ID()]
}

func (fc *faultCluster) indexOf(n *cluster.Node) int {
	for i, m := range fc.nodes {
		if m == n {
			return i
		}
	}
	fc.t.Fatalf("%s is not running", n.ID())
	return -1
}

// holdLeader holds the leader's log write and returns the first command
// entry that waits there, once every follower holds it and Raft counts it
// committed: from then on only the leader's own write is missing.
func (fc *faultCluster) holdLeader(leader *cluster.Node) uint64 {
	fc.t.Helper()
	held, _ := fc.logOf(leader)
	var index uint64
	eventually(fc.t, 10*time.Second, func() error {
		var ok bool
		if index, ok = held.firstBlocked(); !ok {
			return errors.New("the leader wrote nothing yet")
		}
		return nil
	})
	eventually(fc.t, 10*time.Second, func() error {
		for _, n := range fc.nodes {
			if n == nil {
				continue
			}
			if st := n.Status(); st.LastLogIndex < index {
				return fmt.Errorf("%s holds up to %d, not %d", st.ID, st.LastLogIndex, index)
			}
		}
		if st := leader.Status(); st.CommitIndex < index {
			return fmt.Errorf("raft commit index %d, not %d", st.CommitIndex, index)
		}
		return nil
	})
	return index
}

// whileHeld checks check for a while (the leader's write still held): a
// check that fails means something acted on the entry too early.
func whileHeld(t *testing.T, check func()) {
	t.Helper()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		check()
	}
}

// noneApplied requires that no running node applied index.
func (fc *faultCluster) noneApplied(t *testing.T, index uint64) {
	t.Helper()
	for _, n := range fc.nodes {
		if n != nil {
			require.Less(t, cluster.StoredApplied(n), index, "%s applied entry %d before the leader stored it", n.ID(), index)
		}
	}
}

// notAnswered requires that nothing came on ch yet.
func notAnswered[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s was answered (%+v) before the leader stored it", what, v)
	default:
	}
}

// reopenBroken closes the node whose log write failed — its close says so
// — and opens it again.
func (fc *faultCluster) reopenBroken(i int) {
	fc.t.Helper()
	err := fc.nodes[i].Close()
	require.ErrorIs(fc.t, err, errDiskGone, "closing %s reports its failed log write", fc.id(i))
	fc.nodes[i] = nil
	fc.start(i, false)
}

// waitOtherLeader waits until a node other than failed serves: the node
// whose log write failed must not keep the cluster from serving.
func (fc *faultCluster) waitOtherLeader(failed *cluster.Node) {
	fc.t.Helper()
	eventually(fc.t, 30*time.Second, func() error {
		for _, n := range fc.nodes {
			if n != nil && n != failed && n.Status().Serving {
				return nil
			}
		}
		return fmt.Errorf("no node but the failed %s (%s) leads", failed.ID(), failed.Status().State)
	})
	require.False(fc.t, failed.Status().Serving, "the failed node serves")
}

type appendOutcome struct {
	res equeue.AppendResult
	err error
}

func sendAsync(n *cluster.Node, topic string, m *equeue.Message) <-chan appendOutcome {
	ch := make(chan appendOutcome, 1)
	go func() {
		res, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{m}})
		ch <- appendOutcome{res, err}
	}()
	return ch
}

// requireOutcome requires one of the three answers a caller may get.
func requireOutcome(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, equeue.ErrIndeterminate) && !errors.Is(err, equeue.ErrNotLeader) {
		t.Fatalf("answer neither stored, not stored nor unknown: %v", err)
	}
}

// resendUntilAnswered sends m to whichever node serves until one answers
// nil (refusals and unknown outcomes of a cluster still recovering are
// retried: m carries a dedup ID).
func (fc *faultCluster) resendUntilAnswered(topic string, m equeue.Message) equeue.AppendResult {
	fc.t.Helper()
	var res equeue.AppendResult
	eventually(fc.t, 30*time.Second, func() error {
		cp := m
		var err error
		res, err = fc.waitLeader().Append(context.Background(), &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{&cp}})
		requireOutcome(fc.t.(*testing.T), err)
		return err
	})
	return res
}

// storedEverywhere closes every node and returns what each stores of
// topic, requiring that all store the same.
func (fc *faultCluster) storedEverywhere(t *testing.T, topic string) map[int][]string {
	t.Helper()
	fc.waitConverged()
	fc.closeAll()
	var first map[int][]string
	for i, dir := range fc.dirs {
		got := readAll(t, dir, topic)
		if i == 0 {
			first = got
			continue
		}
		require.Equal(t, first, got, "node %d stores what node 1 stores", i+1)
	}
	return first
}
