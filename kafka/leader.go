package kafka

import (
	"hash/fnv"
	"net"
	"strconv"

	"github.com/equeue-go/equeue"
)

// ClusterNode is the optional capability of a Broker that is one node of a
// replicated cluster (a *cluster.Node). Every node may run a listener; the
// cluster's leader serves Kafka clients, and the listener of a follower
// points them to it: its Metadata names the leader as the one broker and
// controller, FindCoordinator names the leader, and it refuses the rest
// with the errors on which Kafka clients look the leader up again
// (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, NOT_CONTROLLER). So a client
// given any node's address finds the leader, and follows a failover to the
// next one as it would between Kafka brokers (give it every node's address
// as bootstrap servers, so that it reaches a live one when the leader it
// knew is gone).
type ClusterNode interface {
	// ID is this node's ID in the cluster.
	ID() string
	// KafkaLeader returns the leader's node ID ("" while no leader is
	// known), the Kafka address it advertises ("" when unknown) and
	// whether this node is the leader.
	KafkaLeader() (id, addr string, self bool)
	// Term is the node's current Raft term: it grows at every election,
	// so a node that leads again after another led leads in a later term.
	// The listener keeps what it learned of producers and groups for one
	// term only (see Server.term).
	Term() uint64
}

// topicReader is the optional capability of a ClusterNode of listing the
// topics its store holds (cluster.Node.StoredTopics): a follower's listener
// lists them in Metadata, led by the leader. Without it a follower lists
// none and answers a named topic with LEADER_NOT_AVAILABLE.
type topicReader interface {
	StoredTopics() ([]equeue.TopicInfo, error)
}

// brokerID maps a cluster node's ID to the broker ID Kafka clients see:
// the same on every node and across restarts (FNV-1a, 31 bits). Two node
// IDs of one cluster that map to the same broker ID would confuse clients;
// with a few nodes that is about one chance in a billion.
func brokerID(node string) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(node))
	return int32(h.Sum32() & 0x7fffffff)
}

// leaderView is where Kafka clients of this listener are to go.
type leaderView struct {
	self bool  // this listener serves: it leads, or its broker is no cluster node
	id   int32 // the leader's broker ID; -1 when unknown
	host string
	port int32
}

// leader says which broker leads, as this listener's node knows it.
func (c *conn) leader() leaderView {
	host, port := c.advertised()
	n := c.s.node
	if n == nil {
		return leaderView{self: true, id: nodeID, host: host, port: port}
	}
	id, addr, self := n.KafkaLeader()
	switch {
	case self:
		return leaderView{self: true, id: brokerID(id), host: host, port: port}
	case id == "":
		return leaderView{id: -1}
	case addr == "":
		c.s.warnNoKafkaLeader(id)
		return leaderView{id: -1}
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return leaderView{id: -1}
	}
	pn, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return leaderView{id: -1}
	}
	return leaderView{id: brokerID(id), host: h, port: int32(pn)}
}

// leads reports whether this listener serves: its broker is no cluster
// node, or its node leads.
func (s *Server) leads() bool {
	if s.node == nil {
		return true
	}
	_, _, self := s.node.KafkaLeader()
	return self
}

// term is the leadership term this listener serves in: its node's Raft
// term, 0 without a cluster. What the listener keeps in memory of
// idempotent producers (their sequence numbers) and of groups (members,
// generations) is true of one term only: a node that leads again may have
// missed what clients did at the leaders in between. Checked against its
// own sequence numbers, a producer's retry of a batch another leader
// stored would be refused as out of order, and the client would store it
// again under a new epoch, with IDs a dedup window has not seen; a member
// of a stale generation could commit an offset behind the group's. So
// both are forgotten when the term changes (producers.lock and
// coordinator.lock).
func (s *Server) term() uint64 {
	if s.node == nil {
		return 0
	}
	return s.node.Term()
}

// selfID is this listener's own broker ID.
func (c *conn) selfID() int32 {
	if c.s.node == nil {
		return nodeID
	}
	return brokerID(c.s.node.ID())
}

// servedByLeaderOnly lists the requests a follower's listener refuses
// (with notLeading): everything that reads or changes the engine, the
// groups the leader's listener coordinates, and producer IDs (only the
// leader hands them out, so that two listeners never give one ID to two
// producers: see initProducerID). Metadata and FindCoordinator are
// answered (they name the leader).
var servedByLeaderOnly = map[int16]bool{
	produceKey: true, fetchKey: true, listOffsetsKey: true, initProducerIDKey: true,
	offsetCommitKey: true, offsetFetchKey: true, joinGroupKey: true, heartbeatKey: true,
	leaveGroupKey: true, syncGroupKey: true, describeGroupsKey: true, listGroupsKey: true,
	createTopicsKey: true, deleteTopicsKey: true, describeConfigsKey: true, createPartitionsKey: true,
	consumerGroupHBKey: true, consumerGroupDKey: true,
}

// warnNoKafkaLeader logs, once per leader, that the leader named no Kafka
// address (it runs no listener, or an older version): this listener can
// send Kafka clients nowhere, and they retry until another node leads.
func (s *Server) warnNoKafkaLeader(leader string) {
	s.mu.Lock()
	first := s.noKafkaLeader != leader
	s.noKafkaLeader = leader
	s.mu.Unlock()
	if first {
		s.log.Warn("kafka: the cluster's leader has no Kafka address (cluster.Options.KafkaAddr); Kafka clients of this follower cannot reach it", "leader", leader)
	}
}
