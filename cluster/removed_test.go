package cluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A node removed from the cluster says so in its Status (Removed), and no
// longer once it is added again. Before, a removed node that kept running
// answered Status as a follower without a leader, like one cut off.
func TestNode_StatusShowsARemovedNode(t *testing.T) {
	c := newCluster(t, 2, nil)
	li := c.leaderIndex()
	leader, fi := c.nodes[li], 1-li
	require.False(t, leader.Status().Removed)
	require.False(t, c.nodes[fi].Status().Removed)

	require.NoError(t, leader.RemoveServer(t.Context(), c.id(fi)))
	eventually(t, 10*time.Second, func() error {
		if !c.nodes[fi].Status().Removed {
			return errors.New("the removed node's Status does not say so")
		}
		return nil
	})
	require.False(t, leader.Status().Removed)

	c.addVoter(fi)
	eventually(t, 10*time.Second, func() error {
		if c.nodes[fi].Status().Removed {
			return errors.New("the node added again still says it was removed")
		}
		return nil
	})
}

// A removed node is still not a member after a restart: it keeps saying
// so (Removed) until it is added again, and no longer once it is, across
// a restart too.
func TestNode_RemovedNodeRestartedSaysRemovedUntilAddedAgain(t *testing.T) {
	c := newCluster(t, 2, nil)
	li := c.leaderIndex()
	leader, fi := c.nodes[li], 1-li
	require.NoError(t, leader.RemoveServer(t.Context(), c.id(fi)))
	eventually(t, 10*time.Second, func() error {
		if !c.nodes[fi].Status().Removed {
			return errors.New("the removed node's Status does not say so")
		}
		return nil
	})

	c.stop(fi)
	c.start(fi, false)
	require.True(t, c.nodes[fi].Status().Removed, "restarted, the removed node is still not a member")

	c.addVoter(fi)
	eventually(t, 10*time.Second, func() error {
		if c.nodes[fi].Status().Removed {
			return errors.New("the node added again still says it was removed")
		}
		return nil
	})

	c.stop(fi)
	c.start(fi, false)
	require.False(t, c.nodes[fi].Status().Removed, "restarted after it was added again, the node is a member")
}

// The Raft connections to a removed node end at the latest once the
// nodes that opened them close, and leave no goroutine behind (TestMain).
func TestNode_ConnectionsToARemovedNodeEndWhenTheOthersClose(t *testing.T) {
	c := newCluster(t, 3, nil)
	li := c.leaderIndex()
	ri := (li + 1) % 3
	require.NoError(t, c.nodes[li].RemoveServer(t.Context(), c.id(ri)))
	removed := c.nodes[ri]
	eventually(t, 10*time.Second, func() error {
		if !removed.Status().Removed {
			return errors.New("the removed node's Status does not say so")
		}
		return nil
	})

	for i := range c.nodes {
		if i != ri {
			c.stop(i)
		}
	}
	eventually(t, 10*time.Second, func() error {
		if n := removed.AcceptedConns(); n > 0 {
			return fmt.Errorf("the removed node still serves %d connections of closed nodes", n)
		}
		return nil
	})
}

// The nodes close their Raft connections to a node once their
// configuration no longer holds its address: a removed node left running
// serves none of them while the others run on, and the goroutines that
// served them end. Before, the leader's transport (hashicorp/raft's) kept
// its idle connections to the removed node, up to 3, until the leader
// closed, and the removed node kept a goroutine reading each.
func TestNode_ConnectionsToARemovedNodeCloseWhileTheOthersRun(t *testing.T) {
	c := newCluster(t, 3, nil)
	li := c.leaderIndex()
	ri := (li + 1) % 3
	removed := c.nodes[ri]
	eventually(t, 10*time.Second, func() error {
		if removed.AcceptedConns() == 0 {
			return errors.New("the leader opened no connection to the node yet")
		}
		return nil
	})
	require.NoError(t, c.nodes[li].RemoveServer(t.Context(), c.id(ri)))
	eventually(t, 10*time.Second, func() error {
		if !removed.Status().Removed {
			return errors.New("the removed node's Status does not say so")
		}
		return nil
	})

	eventually(t, 10*time.Second, func() error {
		if n := removed.AcceptedConns(); n > 0 {
			return fmt.Errorf("the removed node still serves %d connections of the nodes that removed it", n)
		}
		return nil
	})
	require.Equal(t, li, c.leaderIndex(), "the leader still leads")
	other := 3 - li - ri
	require.Positive(t, c.nodes[other].AcceptedConns(), "the follower left keeps its connections from the leader")
}
