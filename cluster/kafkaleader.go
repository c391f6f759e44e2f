package cluster

import (
	"fmt"

	"github.com/equeue-go/equeue"
)

// KafkaLeader names the leader to a Kafka listener (package kafka) that
// serves this node: the leader's node ID, the Kafka address it wrote in
// its tenure entry (Options.KafkaAddr), and whether it is this node. id is
// "" while no leader is known; addr is "" when the leader has no Kafka
// address or this node has not yet applied its tenure entry. A listener
// on a follower tells Kafka clients to go to the leader, and Kafka
// clients follow a failover from one node's listener to the next. A node
// whose store holds another cluster's data than the leader's
// (ErrForeignCluster) knows no leader (foreignleader.go).
func (n *Node) KafkaLeader() (id, addr string, self bool) {
	laddr, lid := n.raft.LeaderWithID()
	if lid == "" || n.foreignTo(laddr, lid) {
		return "", "", false
	}
	id = string(lid)
	if id == n.opts.ID {
		return id, n.opts.KafkaAddr, true
	}
	if s := n.fsm.current(); s.leaderID == id {
		addr = s.kafkaAddr
	}
	return id, addr, false
}

// Term is the node's current Raft term (Status.Term, without the rest):
// a Kafka listener forgets what it kept of producers and groups when the
// term it serves in changes.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// StoredTopics lists the topics this node's store holds
// (equeue.StoredTopics): on a follower, as of the last entry it applied.
// A follower runs no engine; its Kafka listener lists these in Metadata,
// led by the leader, so that Kafka clients learn the topics from any node.
// It fails with an error matching ErrForeignCluster when the store holds
// another cluster's data than the leader's (foreignleader.go).
func (n *Node) StoredTopics() ([]equeue.TopicInfo, error) {
	if laddr, lid := n.raft.LeaderWithID(); lid != "" && n.foreignTo(laddr, lid) {
		return nil, fmt.Errorf("cluster: stored topics: %w", ErrForeignCluster)
	}
	return equeue.StoredTopics(n.st)
}
