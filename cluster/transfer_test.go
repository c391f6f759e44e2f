package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// A leader handing its leadership over holds no lease until the hand-over
// ends: the target may be elected before the leader hears of it. A caller
// that stops waiting (its context ends), or a second transfer Raft refuses
// while the first goes on, does not end the hand-over, so the leader must
// still serve nothing.
func TestNode_NoLeaseWhileATransferGoesOnAfterItsCallerLeft(t *testing.T) {
	nets := map[string]*cutNet{}
	c := newCluster(t, 3, func(o *cluster.Options) {
		// Raft gives a transfer up to an election timeout to complete: long
		// enough here that it is still under way when checked below.
		o.ElectionTimeout = 30 * time.Second
		cn, err := newCutNet(o.RaftAddr)
		require.NoError(t, err)
		o.RaftStream = cn
		nets[o.ID] = cn
	})
	ctx := t.Context()
	c.createTopic(t, "t", 1)
	c.waitConverged()
	leader := c.waitLeader()

	// Cut one follower off, and write without it: the transfer to it waits
	// for it to catch up, and so goes on.
	var target, other *cluster.Node
	for _, n := range c.nodes {
		if n != leader {
			if target == nil {
				target = n
			} else {
				other = n
			}
		}
	}
	nets[leader.ID()].set([]string{target.RaftAddr()})
	nets[target.ID()].set([]string{leader.RaftAddr(), other.RaftAddr()})
	nets[other.ID()].set([]string{target.RaftAddr()})
	defer func() {
		for _, cn := range nets {
			cn.set(nil)
		}
	}()
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.NoError(t, err)
	require.True(t, leader.Status().LeaseHeld, "the leader and the other follower are a majority")

	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	transferred := make(chan error, 1)
	go func() { transferred <- leader.TransferLeadership(tctx, target.ID()) }()
	eventually(t, 10*time.Second, func() error {
		if leader.Status().LeaseHeld {
			return errors.New("the leader still holds its lease while it hands over")
		}
		return nil
	})
	// Raft refuses a second transfer while the first goes on; the first
	// still goes on.
	err = leader.TransferLeadership(ctx, "")
	require.Error(t, err, "a second transfer while one goes on")
	require.Equal(t, "Leader", leader.Status().State)
	require.False(t, leader.Status().LeaseHeld, "a refused second transfer gave the leader its lease back while the first goes on")

	// The caller of the first stops waiting; the transfer goes on.
	cancel()
	require.ErrorIs(t, <-transferred, context.Canceled)
	require.Equal(t, "Leader", leader.Status().State)
	require.False(t, leader.Status().LeaseHeld, "a transfer whose caller left gave the leader its lease back while it goes on")
	_, err = leader.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	var nl *cluster.NotLeaderError
	require.True(t, errors.As(err, &nl), "the leader served a read while its leadership may pass to the target: %v", err)
}

// A transfer of leadership to a server that does not vote (a node being
// added, still catching up) or to the leader itself is refused as an
// invalid argument, and the leader goes on leading in its term. Raft
// checks neither: it told the non-voter to stand for election, whose vote
// request in a higher term deposed the leader, and the cluster went
// without a leader until another election, which the non-voter cannot
// win; a transfer to the leader itself failed as an internal error.
func TestNode_TransferToANonVoterOrItselfIsRefused(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx := t.Context()
	c.dirs = append(c.dirs, c.dirs[0]+"-2")
	c.addrs = append(c.addrs, testport.Addr(t))
	c.nodes = append(c.nodes, nil)
	c.start(1, false)
	leader := c.waitLeader()
	require.NoError(t, cluster.AddNonvoter(leader, c.id(1), c.addrs[1]))
	eventually(t, 10*time.Second, func() error {
		if s := c.nodes[1].Status(); s.LeaderID != leader.ID() || s.AppliedIndex < leader.Status().CommitIndex {
			return fmt.Errorf("the non-voter does not follow yet: %+v", s)
		}
		return nil
	})
	term := leader.Status().Term

	err := leader.TransferLeadership(ctx, c.id(1))
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	require.ErrorContains(t, err, "not a voter")
	err = leader.TransferLeadership(ctx, leader.ID())
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)

	srv := httptest.NewServer(cluster.AdminHandler(leader))
	defer srv.Close()
	for _, id := range []string{c.id(1), leader.ID()} {
		res, err := http.Post(srv.URL+"/cluster/transfer?id="+id, "", nil)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, "transfer to %s", id)
	}
	s := leader.Status()
	require.Equal(t, "Leader", s.State)
	require.Equal(t, term, s.Term, "the leader was deposed")
	require.True(t, s.Serving)
}
