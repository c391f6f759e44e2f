package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// TestHunt_IsolatedLeaderComesBack cuts the leader off from both
// followers while a sender goes on writing to it and a group commits
// offsets on it, lets the others elect a leader that takes writes, then
// heals the links and hands the leadership back to the node cut off: what
// the isolated node told its callers holds (a send or commit it refused
// is nowhere, one it acknowledged is everywhere), and once it leads again
// it serves every message the other leader acknowledged, and the offsets
// that leader committed, not its own stale ones.
func TestHunt_IsolatedLeaderComesBack(t *testing.T) {
	nets := map[string]*cutNet{}
	var netsMu sync.Mutex
	c := newCluster(t, 3, func(o *cluster.Options) {
		cn, err := newCutNet(o.RaftAddr)
		require.NoError(t, err)
		o.RaftStream = cn
		netsMu.Lock()
		nets[o.ID] = cn
		netsMu.Unlock()
	})
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.commitOffsets(t, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 0})
	li := c.leaderIndex()
	old := c.nodes[li]
	outcomes := map[string]huntOutcome{}
	for i := range 10 {
		v := fmt.Sprintf("before-%d", i)
		_, err := old.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(v)}}})
		require.NoError(t, err)
		outcomes[v] = huntStored
	}
	require.NoError(t, old.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 5}))

	var others []string
	for i, n := range c.nodes {
		if i != li {
			others = append(others, n.RaftAddr())
			nets[n.ID()].set([]string{old.RaftAddr()})
		}
	}
	nets[old.ID()].set(others)
	healed := false
	heal := func() {
		if !healed {
			for _, cn := range nets {
				cn.set(nil)
			}
			healed = true
		}
	}
	defer heal()

	// The isolated node: every send and commit it answers is told right.
	for i := 0; ; i++ {
		v := fmt.Sprintf("isolated-%d", i)
		_, err := old.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(v)}}})
		outcomes[v] = classify(t, v, err)
		cerr := old.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 7})
		if cerr != nil {
			require.True(t, errors.Is(cerr, equeue.ErrNotLeader) || errors.Is(cerr, equeue.ErrIndeterminate), "commit on the isolated node: %v", cerr)

		}
		if err != nil && cerr != nil {
			break
		}
		require.Less(t, i, 10000, "the isolated node went on taking writes")
	}

	// The others elect a leader, which takes writes and commits.
	var newLeader *cluster.Node
	eventually(t, 30*time.Second, func() error {
		for i, n := range c.nodes {
			if i != li && n.Status().Serving {
				newLeader = n
				return nil
			}
		}
		return errors.New("no leader among the others")
	})
	for i := range 10 {
		v := fmt.Sprintf("after-%d", i)
		eventually(t, 30*time.Second, func() error {
			_, err := newLeader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(v)}}})
			return err
		})
		outcomes[v] = huntStored
	}
	eventually(t, 30*time.Second, func() error {
		return newLeader.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 12})
	})
	// While cut off, the old node serves nothing.
	_, err := old.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
	require.ErrorIs(t, err, equeue.ErrNotLeader, "the isolated node served a read")
	_, err = old.GroupOffsets(ctx, "g")
	require.ErrorIs(t, err, equeue.ErrNotLeader, "the isolated node served offsets")

	heal()
	c.handOver(t, li)
	var offs map[equeue.QueueRef]int64
	c.onServing(t, "offsets", func(n *cluster.Node) error {
		var err error
		offs, err = n.GroupOffsets(ctx, "g")
		return err
	})
	assert.Equal(t, int64(12), offs[equeue.QueueRef{Topic: "t"}], "the offset the new leader committed, once the old node leads again")
	c.waitConverged()
	for i, n := range c.nodes {
		if n != nil {
			c.stop(i)
		}
	}
	for i := range c.nodes {
		checkOutcomes(t, outcomes, readAll(t, c.dirs[i], "t"), c.id(i))
	}
}
