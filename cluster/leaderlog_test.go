package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// heldLog is a Raft log store whose writes wait while it is held.
type heldLog struct {
	raft.LogStore
	mu      sync.Mutex
	hold    chan struct{} // nil: writes pass
	blocked []uint64      // the command entries of writes that waited
}

func (h *heldLog) StoreLogs(logs []*raft.Log) error {
	h.mu.Lock()
	hold := h.hold
	if hold != nil {
		for _, l := range logs {
			if l.Type == raft.LogCommand { // not the leader's no-op or barriers
				h.blocked = append(h.blocked, l.Index)
			}
		}
	}
	h.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return h.LogStore.StoreLogs(logs)
}

func (h *heldLog) StoreLog(l *raft.Log) error { return h.StoreLogs([]*raft.Log{l}) }

func (h *heldLog) setHeld(held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case held && h.hold == nil:
		h.hold = make(chan struct{})
	case !held && h.hold != nil:
		close(h.hold)
		h.hold = nil
	}
}

func (h *heldLog) firstBlocked() (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.blocked) == 0 {
		return 0, false
	}
	return h.blocked[0], true
}

// heldNodes are the held logs (and, when asked for, the cuttable links)
// of a cluster's nodes, by node ID.
type heldNodes struct {
	mu   sync.Mutex
	logs map[string]*heldLog
	nets map[string]*cutNet
}

// newHeldCluster starts three nodes whose Raft logs can be held, and whose
// Raft links can be cut when cut is set.
func newHeldCluster(t *testing.T, cut bool) (*testCluster, *heldNodes) {
	hn := &heldNodes{logs: map[string]*heldLog{}, nets: map[string]*cutNet{}}
	c := newCluster(t, 3, func(o *cluster.Options) {
		id := o.ID
		if cut {
			cn, err := newCutNet(o.RaftAddr)
			require.NoError(t, err)
			o.RaftStream = cn
			hn.mu.Lock()
			hn.nets[id] = cn
			hn.mu.Unlock()
		}
		cluster.SetLogStoreHook(o, func(s raft.LogStore) raft.LogStore {
			h := &heldLog{LogStore: s}
			hn.mu.Lock()
			hn.logs[id] = h
			hn.mu.Unlock()
			return h
		})
	})
	return c, hn
}

func (h *heldNodes) log(id string) *heldLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs[id]
}

func (h *heldNodes) net(id string) *cutNet {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.nets[id]
}

// heal undoes every cut.
func (h *heldNodes) heal() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, cn := range h.nets {
		cn.set(nil)
	}
}

// While the leader's own log write is slow, the entry replicates at once,
// but neither the leader nor any follower applies it — and the sender is
// not answered — until the leader's copy is stored: Raft counted the
// leader toward the majority early, and nothing may act on that count.
func TestLeaderLog_NothingActsOnALeaderCopyNotYetStored(t *testing.T) {
	c, hn := newHeldCluster(t, false)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("first")})
	c.waitConverged()
	leader := c.waitLeader()

	held := hn.log(leader.ID())
	held.setHeld(true)
	defer held.setHeld(false)
	sent := make(chan error, 1)
	go func() {
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("second")}}})
		sent <- err
	}()
	var index uint64
	eventually(t, 10*time.Second, func() error {
		var ok bool
		if index, ok = held.firstBlocked(); !ok {
			return fmt.Errorf("the leader wrote nothing yet")
		}
		return nil
	})
	var followers []*cluster.Node
	for _, n := range c.nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	// Replication does not wait for the leader's write.
	eventually(t, 10*time.Second, func() error {
		for _, f := range followers {
			if st := f.Status(); st.LastLogIndex < index {
				return fmt.Errorf("follower %s holds up to %d, not %d", st.ID, st.LastLogIndex, index)
			}
		}
		if st := leader.Status(); st.CommitIndex < index {
			return fmt.Errorf("raft commit index %d, not %d", st.CommitIndex, index)
		}
		return nil
	})
	// Raft counts the entry committed, yet nobody applies it.
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, n := range c.nodes {
			require.Less(t, cluster.StoredApplied(n), index, "%s applied entry %d before the leader stored it", n.ID(), index)
		}
		select {
		case err := <-sent:
			t.Fatalf("the send was answered (%v) before the leader stored it", err)
		default:
		}
	}
	held.setHeld(false)
	require.NoError(t, <-sent)
	c.waitConverged()
	for _, n := range c.nodes {
		require.GreaterOrEqual(t, cluster.StoredApplied(n), index)
	}
}
