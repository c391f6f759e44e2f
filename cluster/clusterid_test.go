package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// appendN appends n messages named prefix0, prefix1, … to topic through
// node, creating the topic first.
func appendN(t *testing.T, node *cluster.Node, topic, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	e, err := node.Engine()
	require.NoError(t, err)
	if _, err := e.Topic(ctx, topic); err != nil {
		require.NoError(t, e.CreateTopic(ctx, topic, 1))
	}
	for i := range n {
		_, err := node.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte(prefix + strconv.Itoa(i))}}})
		require.NoError(t, err)
	}
}

// topicsOf lists the topics of a closed node's engine.
func topicsOf(t *testing.T, dir string) []string {
	t.Helper()
	e, err := equeue.Open(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ts, err := e.Topics(context.Background())
	require.NoError(t, err)
	var names []string
	for _, ti := range ts {
		names = append(names, ti.Name)
	}
	return names
}

// A node opened on another cluster's directory and added to a cluster is
// refused: its store keeps only its own cluster's data, the cluster that
// tried to add it goes on serving, and the node is not left in its
// configuration.
func TestCluster_NodeOfAnotherClusterIsRefused(t *testing.T) {
	addrs := testport.Addrs(t, 2)
	dirA := filepath.Join(t.TempDir(), "a")

	// Cluster A: one node, 20 messages in topic a.
	oa := nodeOptions("n1", addrs[0])
	oa.Bootstrap = true
	a, err := cluster.Open(dirA, oa)
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error { _, err := a.Engine(); return err })
	appendN(t, a, "a", "a", 20)
	require.NoError(t, a.Close())

	// Cluster B: one node, topic b.
	b := newCluster(t, 1, nil)
	lb := b.waitLeader()
	appendN(t, lb, "b", "b", 2)

	// A's directory, reopened as n2, joins B.
	n2, err := cluster.Open(dirA, nodeOptions("n2", addrs[1]))
	require.NoError(t, err)
	defer func() {
		if n2 != nil {
			_ = n2.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = lb.AddVoter(ctx, "n2", n2.RaftAddr())
	require.ErrorIs(t, err, cluster.ErrForeignCluster, "a node holding another cluster's data was added")

	// B keeps serving: 28 more messages.
	appendN(t, lb, "b", "b-more", 28)
	for _, s := range lb.Status().Servers {
		require.NotEqual(t, "n2", s.ID, "the refused node stays in B's configuration")
	}

	require.NoError(t, n2.Close())
	n2 = nil
	require.Equal(t, []string{"a"}, topicsOf(t, dirA), "the refused node's store holds B's topics")
	got := readAll(t, dirA, "a")
	require.Len(t, got[0], 20)
}

// Every node of a cluster holds its ID: the first leader made it, a node
// added later took it from the entries it applied, and a restart keeps it.
func TestCluster_NodesShareTheClusterIDAcrossRestarts(t *testing.T) {
	c := newCluster(t, 2, nil)
	appendN(t, c.waitLeader(), "t", "m", 3)
	c.waitConverged()
	id := c.nodes[0].Status().ClusterID
	require.Len(t, id, 32, "a 16-byte ID in hex")
	require.Equal(t, id, c.nodes[1].Status().ClusterID, "the added node took the cluster's ID")

	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i, i == 0)
	}
	appendN(t, c.waitLeader(), "t", "again", 1)
	c.waitConverged()
	for i, n := range c.nodes {
		require.Equal(t, id, n.Status().ClusterID, "%s after a restart", c.id(i))
	}
}

// A voter that never catches up is not added: AddVoter adds it as a
// non-voter, which counts toward no majority, and removes it again once
// the caller's context ends, so a one-node cluster goes on serving.
func TestCluster_AddVoterThatNeverCatchesUpIsRemovedAgain(t *testing.T) {
	c := newCluster(t, 1, nil)
	l := c.waitLeader()
	appendN(t, l, "t", "before", 1)
	ghost := testport.Addrs(t, 1)[0] // nothing listens there
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := l.AddVoter(ctx, "ghost", ghost)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, cluster.ErrNotCaughtUp)
	require.ErrorContains(t, err, "did not catch up")
	for _, s := range l.Status().Servers {
		require.NotEqual(t, "ghost", s.ID, "the server that never caught up stays in the configuration")
	}
	appendN(t, l, "t", "after", 1)
}

// A node of another cluster added to a cluster whose log no longer holds
// what the node's log ends at gets a snapshot, not entries, and refuses
// it: AddVoter says so (an error matching ErrForeignCluster) at once,
// instead of waiting for its context to end as for a node that never
// answers, and removes it again.
func TestCluster_NodeOfAnotherClusterRefusingASnapshotIsRefused(t *testing.T) {
	addrs := testport.Addrs(t, 2)
	dirA := filepath.Join(t.TempDir(), "a")

	// Cluster A: one node, a short log.
	oa := nodeOptions("n1", addrs[0])
	oa.Bootstrap = true
	a, err := cluster.Open(dirA, oa)
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() error { _, err := a.Engine(); return err })
	appendN(t, a, "a", "a", 2)
	aLast := a.Status().LastLogIndex
	require.NoError(t, a.Close())

	// Cluster B: one node whose log was compacted past A's last entry.
	b := newCluster(t, 1, func(o *cluster.Options) {
		snapshotOften(o)
		o.LogStore = cluster.LogStoreBolt
	})
	lb := b.waitLeader()
	appendN(t, lb, "b", "b", 80)
	eventually(t, 30*time.Second, func() error {
		if first := lb.Status().FirstLogIndex; first <= aLast+1 {
			return fmt.Errorf("B's log still starts at %d (A's ends at %d)", first, aLast)
		}
		return nil
	})

	// A's directory, reopened as n2, joins B: B sends it a snapshot.
	n2, err := cluster.Open(dirA, nodeOptions("n2", addrs[1]))
	require.NoError(t, err)
	defer func() {
		if n2 != nil {
			_ = n2.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = lb.AddVoter(ctx, "n2", n2.RaftAddr())
	require.ErrorIs(t, err, cluster.ErrForeignCluster, "the node's refusal of the snapshot went unseen")
	require.NotErrorIs(t, err, context.DeadlineExceeded)
	for _, s := range lb.Status().Servers {
		require.NotEqual(t, "n2", s.ID, "the refused node stays in B's configuration")
	}
	appendN(t, lb, "b", "b-more", 2)

	require.NoError(t, n2.Close())
	n2 = nil
	require.Equal(t, []string{"a"}, topicsOf(t, dirA), "the refused node's store holds B's topics")
}
