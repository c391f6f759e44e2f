package cluster_test

import (
	"errors"
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
