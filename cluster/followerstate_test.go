package cluster_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// Nodes that join and are removed again, each under an ID of its own (as
// replaced machines or pods are), leave nothing of theirs in the leader's
// per-follower progress: its lag and lease bookkeeping kept an entry of
// every server that ever followed it, for as long as it led.
func TestNode_RemovedServersLeaveNoFollowerState(t *testing.T) {
	c := newCluster(t, 1, nil)
	leader := c.waitLeader()
	ctx := t.Context()
	const rounds = 3
	addrs := testport.Addrs(t, rounds)
	for i := range rounds {
		id := fmt.Sprintf("gone%d", i)
		n, err := cluster.Open(filepath.Join(t.TempDir(), id), nodeOptions(id, addrs[i]))
		require.NoError(t, err)
		require.NoError(t, leader.AddVoter(ctx, id, n.RaftAddr()))
		eventually(t, 10*time.Second, func() error {
			for _, f := range leader.FollowerLags() {
				if f.ID == id && !f.LastAnswer.IsZero() {
					return nil
				}
			}
			return fmt.Errorf("%s has not answered", id)
		})
		require.NoError(t, leader.RemoveServer(ctx, id))
		require.NoError(t, n.Close())
	}
	// An answer to a call under way at a removal may be noted after it:
	// the leader's next pruning forgets it.
	eventually(t, 15*time.Second, func() error {
		if n := cluster.FollowerEntries(leader); n != 0 {
			return fmt.Errorf("per-follower entries left of %d removed servers", n)
		}
		return nil
	})
}
