package cluster

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// A leader of another cluster. A node whose directory holds another
// cluster's data refuses that leader's connections when both have a
// cluster ID (hello.go), and its entries and snapshots (the relay,
// clusterid.go); a leader of a version before hellos gets through to Raft
// with its heartbeats, which carry no cluster ID, and Raft takes it for
// this node's own. What the node knows of a leader
// from its FSM's state (the tenure entry it applied last: the leader's
// Kafka and client addresses) is then of its own cluster's leader, which
// may have had the same node ID, and the topics its store holds are its
// own cluster's. So a follower names such a leader nowhere: KafkaLeader
// says no leader is known, StoredTopics fails with ErrForeignCluster, and
// a refused call names no leader's address.

// foreignLeader remembers the leader whose entries or snapshot the relay
// last refused as another cluster's, by its node ID and Raft address.
type foreignLeader struct {
	mu       sync.Mutex
	id, addr string
}

// refused records that h's sender was refused as another cluster's leader.
func (f *foreignLeader) refused(h raft.RPCHeader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.id, f.addr = string(h.ID), string(h.Addr)
}

// taken forgets h's sender, when it is the one refused: it sent entries of
// this node's own cluster.
func (f *foreignLeader) taken(h raft.RPCHeader) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.id == string(h.ID) && f.addr == string(h.Addr) {
		f.id, f.addr = "", ""
	}
}

// is reports whether the leader id at addr is the one refused.
func (f *foreignLeader) is(addr raft.ServerAddress, id raft.ServerID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id != "" && f.id == string(id) && f.addr == string(addr)
}

// ownsEntries reports whether args carries an entry stamped with the
// cluster ID own.
func ownsEntries(args *raft.AppendEntriesRequest, own string) bool {
	if own == "" {
		return false
	}
	for _, l := range args.Entries {
		if entryClusterID(l) == own {
			return true
		}
	}
	return false
}

// foreignTo reports whether this node's store holds another cluster's
// data than the leader's, id at addr: the relay refused that leader, or
// the FSM broke on an entry of another cluster.
func (n *Node) foreignTo(addr raft.ServerAddress, id raft.ServerID) bool {
	return n.ptrans.relay.foreign.is(addr, id) || errors.Is(n.fsm.err(), ErrForeignCluster)
}
