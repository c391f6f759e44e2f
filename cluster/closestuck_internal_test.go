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
	"github.com/equeue-go/equeue/internal/testport"
)

// errEntriesRefused is what a refusingVoter answers a call carrying
// entries with.
var errEntriesRefused = errors.New("test voter refuses entries")

// refusingVoter is a Raft voter on loopback that grants every vote and
// answers every heartbeat, so the node it elects keeps leading, but
// refuses every call carrying entries (as a node of another cluster
// refuses its entries, or one that cannot store them) unless accepting
// is set: its leader can commit nothing. It stores nothing: accepting, it
// only says it took the entries. It runs until the test ends; appends
// counts the calls with entries it refused.
type refusingVoter struct {
	trans     *raft.NetworkTransport
	accepting atomic.Bool
	mu        sync.Mutex
	appends   int
}

func newRefusingVoter(t *testing.T) *refusingVoter {
	v := &refusingVoter{trans: testTransport(t)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	wg.Go(func() {
		for {
			select {
			case rpc := <-v.trans.Consumer():
				rpc.Respond(v.answer(rpc.Command))
			case <-stop:
				return
			}
		}
	})
	return v
}

func (v *refusingVoter) answer(cmd any) (any, error) {
	switch c := cmd.(type) {
	case *raft.RequestPreVoteRequest:
		return &raft.RequestPreVoteResponse{Term: c.Term, Granted: true}, nil
	case *raft.RequestVoteRequest:
		return &raft.RequestVoteResponse{Term: c.Term, Granted: true}, nil
	case *raft.AppendEntriesRequest:
		if n := len(c.Entries); n > 0 && v.accepting.Load() {
			return &raft.AppendEntriesResponse{Term: c.Term, LastLog: c.Entries[n-1].Index, Success: true}, nil
		}
		if len(c.Entries) > 0 {
			v.mu.Lock()
			v.appends++
			v.mu.Unlock()
			return nil, errEntriesRefused
		}
		return &raft.AppendEntriesResponse{Term: c.Term, LastLog: c.PrevLogEntry, Success: true}, nil
	default:
		return nil, errEntriesRefused
	}
}

func (v *refusingVoter) refused() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.appends
}

// A node elected by voters that then refuse its entries leads (their
// heartbeats answer) but commits nothing: its tenure entry stays on its
// way for ever. Close returns all the same, leaving the tenure unstarted.
func TestNode_CloseOfALeaderThatCannotCommit(t *testing.T) {
	v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
	n := openWithVoters(t, v2, v3)

	// Leading, its tenure entry (after Raft's no-op) in its log, refused.
	require.Eventually(t, func() bool {
		return n.raft.State() == raft.Leader && n.raft.LastIndex() >= 3 && v2.refused() > 0 && v3.refused() > 0
	}, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, raft.Leader, n.raft.State(), "still leading: the voters answer its heartbeats")
	require.False(t, n.Status().Serving, "no tenure started: nothing committed")

	requireCloses(t, n)
}

// openWithVoters opens the node n1 of a cluster of three voters, n1 and
// the two given, which elect it.
func openWithVoters(t *testing.T, v2, v3 *refusingVoter) *Node {
	t.Helper()
	return openWithVotersOpts(t, v2, v3, nil)
}

// openWithVotersOpts is openWithVoters with the node's options changed
// by mod first, when not nil.
func openWithVotersOpts(t *testing.T, v2, v3 *refusingVoter, mod func(*Options)) *Node {
	t.Helper()
	addr := testport.Addr(t)
	o := &Options{ID: "n1", RaftAddr: addr, Bootstrap: true, noHello: true,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond,
		Peers: []Peer{{ID: "n1", RaftAddr: addr}, {ID: "n2", RaftAddr: string(v2.trans.LocalAddr())}, {ID: "n3", RaftAddr: string(v3.trans.LocalAddr())}}}
	if mod != nil {
		mod(o)
	}
	n, err := Open(t.TempDir(), o)
	require.NoError(t, err)
	return n
}

// requireCloses closes n, failing the test when Close does not return
// (the bound only detects a hang).
func requireCloses(t *testing.T, n *Node) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("Close of a leader that cannot commit did not return")
	}
}

// A serving leader whose voters start refusing its entries still leads
// and commits nothing: a write it has on its way is never committed.
// Close returns all the same, and the write ends with an unknown outcome
// (the entry is in the leader's log: a later leader may commit it).
func TestNode_CloseOfAServingLeaderThatCannotCommit(t *testing.T) {
	v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
	v2.accepting.Store(true)
	v3.accepting.Store(true)
	n := openWithVoters(t, v2, v3)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))

	v2.accepting.Store(false)
	v3.accepting.Store(false)
	appended := make(chan error, 1)
	go func() {
		_, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		appended <- err
	}()
	require.Eventually(t, func() bool { return v2.refused() > 0 && v3.refused() > 0 }, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, raft.Leader, n.raft.State(), "still leading: the voters answer its heartbeats")

	requireCloses(t, n)
	select {
	case err := <-appended:
		require.ErrorIs(t, err, equeue.ErrIndeterminate)
	case <-time.After(60 * time.Second):
		t.Fatal("the write on its way did not end")
	}
}

// The entry AddVoter waits for a new node to catch up to (mark) is never
// committed by a leader whose voters refuse its entries: the wait ends
// with its context, and leaves the tenure as it was.
func TestNode_MarkEndsWithItsContext(t *testing.T) {
	v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
	v2.accepting.Store(true)
	v3.accepting.Store(true)
	n := openWithVoters(t, v2, v3)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()

	v2.accepting.Store(false)
	v3.accepting.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	marked := make(chan error, 1)
	go func() {
		_, err := rs.mark(ctx)
		marked <- err
	}()
	require.Eventually(t, func() bool { return v2.refused() > 0 && v3.refused() > 0 }, 30*time.Second, 10*time.Millisecond)
	cancel()
	select {
	case err := <-marked:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(60 * time.Second):
		t.Fatal("mark did not end with its context")
	}
	require.False(t, rs.isFenced(), "an abandoned wait does not end the tenure")
	requireCloses(t, n)
}
