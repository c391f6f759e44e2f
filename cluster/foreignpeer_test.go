package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A node of another cluster named in Peers by mistake cannot take the
// leadership. Cluster A ran n1, n2 and n3 on the addresses cluster B
// bootstraps on later; A's n2, reopened, holds a longer log than B's, of a
// later term, and a configuration listing B's nodes. Before, its Raft calls
// carried no cluster ID: it won B's election, and B's nodes, refusing its
// entries but following its heartbeats, committed nothing from then on.
// (It needs a moment without a leader in B, here B's leader down: B's
// nodes refuse a pre-vote while they know a leader.) Now the
// nodes of two clusters refuse each other's connections: B elects a
// leader of its own and takes writes, and the foreign node hears of no
// leader.
func TestCluster_ForeignPeerCannotTakeTheLeadership(t *testing.T) {
	ctx := context.Background()

	// Cluster A: a longer log than B's, in a later term.
	a := newCluster(t, 3, nil)
	appendN(t, a.waitLeader(), "a", "a", 30)
	for i := 0; a.waitLeader().Status().Term < 6; i++ {
		require.Less(t, i, 20, "A's term does not rise")
		l := a.waitLeader()
		target := "n1"
		if l.ID() == target {
			target = "n2"
		}
		_ = l.TransferLeadership(ctx, target) // a failed one is tried again
	}
	a.waitConverged()
	aTerm := a.nodes[1].Status().Term
	for i := range a.nodes {
		a.stop(i)
	}

	// Cluster B: n1 and n3 on A's addresses, with A's n2 named in Peers.
	peers := []cluster.Peer{{ID: "n1", RaftAddr: a.addrs[0]}, {ID: "n2", RaftAddr: a.addrs[1]}, {ID: "n3", RaftAddr: a.addrs[2]}}
	base := t.TempDir()
	var b []*cluster.Node
	var bOpts []*cluster.Options
	for _, p := range []cluster.Peer{peers[0], peers[2]} {
		o := nodeOptions(p.ID, p.RaftAddr)
		o.Bootstrap, o.Peers = true, peers
		n, err := cluster.Open(filepath.Join(base, p.ID), o)
		require.NoError(t, err)
		b, bOpts = append(b, n), append(bOpts, o)
	}
	defer func() {
		for _, n := range b {
			if n != nil {
				require.NoError(t, n.Close())
			}
		}
	}()
	write := func(body string) error {
		for _, n := range b {
			if !n.Status().Serving {
				continue
			}
			e, err := n.Engine()
			if err != nil {
				return err
			}
			if _, err := e.Topic(ctx, "b"); err != nil {
				if err := e.CreateTopic(ctx, "b", 1); err != nil {
					return err
				}
			}
			_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "b", Messages: []*equeue.Message{{Body: []byte(body)}}})
			return err
		}
		return fmt.Errorf("no node of B serves (n1 names leader %q, n3 %q)", b[0].Status().LeaderID, b[1].Status().LeaderID)
	}
	eventually(t, 30*time.Second, func() error { return write("before") })
	require.Less(t, b[0].Status().Term, aTerm, "B's term reached A's: A's node would not have the later log")
	require.NotEmpty(t, b[0].Status().ClusterID)

	// A's n2 comes back, as B's n2, while B's leader is down: B's other
	// node knows no leader, and A's node, with the later log, asks it for
	// its vote.
	li := 0
	if !b[0].Status().Serving {
		li = 1
	}
	other := b[1-li]
	require.NoError(t, b[li].Close())
	b[li] = nil
	logs := &logBuffer{}
	fo := nodeOptions("n2", a.addrs[1])
	fo.Logger = slog.New(slog.NewTextHandler(logs, nil))
	f, err := cluster.Open(a.dirs[1], fo)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	eventually(t, 30*time.Second, func() error {
		if other.Status().LeaderID == "n2" {
			return nil // A's node won
		}
		if s := other.Status(); s.State != "Candidate" || s.LeaderID != "" {
			return fmt.Errorf("B's %s is %s, following %q", other.ID(), s.State, s.LeaderID)
		}
		if !strings.Contains(logs.String(), "Raft connection of another cluster") {
			return errors.New("A's node has not asked B's node yet")
		}
		return nil // A's node asked, and was refused
	})
	n, err := cluster.Open(filepath.Join(base, bOpts[li].ID), bOpts[li])
	require.NoError(t, err)
	b[li] = n

	// B elects a leader of its own, and takes writes.
	for i := range 10 {
		eventually(t, 20*time.Second, func() error { return write(fmt.Sprintf("after%d", i)) })
	}
	for _, n := range b {
		assert.NotEqual(t, "n2", n.Status().LeaderID, "%s follows A's node", n.ID())
	}
	assert.NotEqual(t, "Leader", f.Status().State, "A's node leads")
	assert.Empty(t, f.Status().LeaderID, "A's node hears from B's leader")
}
