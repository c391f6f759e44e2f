package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// A node whose directory holds another cluster's data, named a peer of a
// cluster whose nodes run a version before hellos (hello.go: their
// connections carry no cluster ID), refuses its leader's entries but
// takes its heartbeats, so Raft knows that leader. Its store's state
// names its own cluster's leader, which had the same node ID: the node must not give that leader's Kafka
// or client address for the other cluster's leader, nor list its own
// cluster's topics as led by it. Before, its Kafka listener sent clients
// to the other cluster's broker for topics the cluster they asked of does
// not hold.
func TestCluster_NodeOfAnotherClusterNamesNoLeader(t *testing.T) {
	addrs := testport.Addrs(t, 4)
	base := t.TempDir()
	dirA := filepath.Join(base, "a")

	// Cluster A: one node, n1, with its own Kafka and client addresses.
	oa := nodeOptions("n1", addrs[0])
	oa.Bootstrap, oa.KafkaAddr, oa.ClientAddr = true, "kafka-a-n1:9092", "client-a-n1"
	a, err := cluster.Open(dirA, oa)
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error { _, err := a.Engine(); return err })
	appendN(t, a, "a", "a", 3)
	require.NoError(t, a.Close())

	// Cluster B: n1 and n3, bootstrapped with A's directory as peer n2.
	peers := []cluster.Peer{{ID: "n1", RaftAddr: addrs[1]}, {ID: "n2", RaftAddr: addrs[2]}, {ID: "n3", RaftAddr: addrs[3]}}
	var b []*cluster.Node
	for _, p := range []cluster.Peer{peers[0], peers[2]} {
		o := nodeOptions(p.ID, p.RaftAddr)
		o.Bootstrap, o.Peers, o.KafkaAddr = true, peers, "kafka-b-"+p.ID+":9092"
		cluster.SetNoHello(o)
		n, err := cluster.Open(filepath.Join(base, "b-"+p.ID), o)
		require.NoError(t, err)
		b = append(b, n)
	}
	defer func() {
		for _, n := range b {
			require.NoError(t, n.Close())
		}
	}()
	ctx := context.Background()
	var leader *cluster.Node
	eventually(t, 30*time.Second, func() error {
		for _, n := range b {
			if n.Status().Serving {
				leader = n
				return nil
			}
		}
		return errors.New("B has no leader")
	})
	if leader.ID() != "n1" {
		require.NoError(t, leader.TransferLeadership(ctx, "n1"))
	}
	eventually(t, 30*time.Second, func() error {
		if !b[0].Status().Serving {
			return errors.New("n1 of B does not lead")
		}
		return nil
	})

	n2, err := cluster.Open(dirA, nodeOptions("n2", addrs[2]))
	require.NoError(t, err)
	defer func() { require.NoError(t, n2.Close()) }()
	eventually(t, 30*time.Second, func() error {
		if got := n2.Status().LeaderID; got != "n1" {
			return fmt.Errorf("n2's Raft knows leader %q", got)
		}
		id, addr, self := n2.KafkaLeader()
		if id != "" || addr != "" || self {
			return fmt.Errorf("n2 names B's leader for Kafka as %q at %q (self %v)", id, addr, self)
		}
		return nil
	})
	_, err = n2.StoredTopics()
	require.ErrorIs(t, err, cluster.ErrForeignCluster, "n2 lists A's topics as B's")
	_, err = n2.Append(ctx, &equeue.AppendRequest{Topic: "a", Messages: []*equeue.Message{{Body: []byte("x")}}})
	var nl *cluster.NotLeaderError
	require.ErrorAs(t, err, &nl)
	assert.Empty(t, nl.LeaderAddr, "n2 sends clients to A's leader's address")
}

// A follower whose FSM broke on an entry of another cluster names no
// leader either; one broken otherwise (here: an injected store failure)
// still names its own cluster's leader, whose tenure its state holds.
func TestCluster_FollowerBrokenByAForeignEntryNamesNoLeader(t *testing.T) {
	c := newCluster(t, 2, func(o *cluster.Options) { o.KafkaAddr = "kafka-" + o.ID + ":9092" })
	li := c.leaderIndex()
	f := c.nodes[(li+1)%2]
	lid := c.id(li)
	eventually(t, 30*time.Second, func() error {
		if id, addr, _ := f.KafkaLeader(); id != lid || addr != "kafka-"+lid+":9092" {
			return fmt.Errorf("the follower names %q at %q", id, addr)
		}
		return nil
	})

	cluster.BreakStore(f, errors.New("injected store failure"))
	id, addr, _ := f.KafkaLeader()
	assert.Equal(t, []string{lid, "kafka-" + lid + ":9092"}, []string{id, addr}, "a store of this cluster, broken")
	_, err := f.StoredTopics()
	require.NoError(t, err)

	cluster.BreakStore(f, fmt.Errorf("apply entry 9: %w", cluster.ErrForeignCluster))
	id, addr, self := f.KafkaLeader()
	assert.Equal(t, []any{"", "", false}, []any{id, addr, self}, "a store of another cluster")
	_, err = f.StoredTopics()
	require.ErrorIs(t, err, cluster.ErrForeignCluster)
}
