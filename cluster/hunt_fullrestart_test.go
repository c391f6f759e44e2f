package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// TestHunt_WholeClusterRestartWithSnapshotsKeepsEveryFeature stops every
// node at once (uncleanly, as a crash would leave their stores) while
// delayed messages are pending, with snapshots taken and the logs
// compacted under them, and starts them all again: every acknowledged
// message is there at the offset its send was told, each delayed message
// is delivered once, the dedup window still answers the IDs sent, and the
// group's committed offsets are those last committed.
func TestHunt_WholeClusterRestartWithSnapshotsKeepsEveryFeature(t *testing.T) {
	c := newCluster(t, 3, func(o *cluster.Options) {
		o.SnapshotThreshold, o.TrailingLogs, o.SnapshotInterval = 8, 4, 50*time.Millisecond
	})
	c.createTopicWith(t, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour})
	ctx := context.Background()
	leader := c.waitLeader()

	type sent struct {
		id  string
		res equeue.AppendResult
	}
	var plain []sent
	for i := range 60 {
		id := fmt.Sprintf("p%d", i)
		res, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{ID: id, Body: []byte(id)}}})
		require.NoError(t, err)
		plain = append(plain, sent{id, res})
	}
	due := time.Now().Add(3 * time.Second)
	var delayed []string
	for i := range 10 {
		id := fmt.Sprintf("d%d", i)
		res, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{ID: id, Body: []byte(id), DeliverAt: due}}})
		require.NoError(t, err)
		require.True(t, res.Delayed)
		delayed = append(delayed, id)
	}
	require.NoError(t, leader.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 42}))
	c.waitConverged()
	eventually(t, 20*time.Second, func() error {
		for i, n := range c.nodes {
			if n.Status().FirstLogIndex <= 1 {
				return fmt.Errorf("%s has compacted no log into a snapshot", c.id(i))
			}
		}
		return nil
	})

	for i, n := range c.nodes {
		require.NoError(t, n.CloseUnclean())
		c.nodes[i] = nil
	}
	for i := range c.nodes {
		c.start(i, false)
	}

	got := huntPullAll(t, c, "t", 0)
	require.Len(t, got, len(plain))
	for _, s := range plain {
		assert.Equal(t, s.id, string(got[s.res.FirstOffset].Body), "acknowledged at %d", s.res.FirstOffset)
	}
	var moved []*equeue.Message
	eventually(t, 20*time.Second, func() error {
		moved = huntPullAll(t, c, "t", 1)
		if len(moved) < len(delayed) {
			return fmt.Errorf("%d of %d delayed messages delivered", len(moved), len(delayed))
		}
		return nil
	})
	seen := map[string]int{}
	for _, m := range moved {
		seen[string(m.Body)]++
	}
	for _, id := range delayed {
		assert.Equal(t, 1, seen[id], "%s delivered once", id)
	}
	for _, s := range plain[:5] {
		var res equeue.AppendResult
		c.onServing(t, "send again", func(n *cluster.Node) error {
			var err error
			res, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{ID: s.id, Body: []byte(s.id)}}})
			return err
		})
		assert.True(t, res.Duplicate, "%s sent again", s.id)
		assert.Equal(t, s.res.FirstOffset, res.FirstOffset)
	}
	var offs map[equeue.QueueRef]int64
	c.onServing(t, "offsets", func(n *cluster.Node) error {
		var err error
		offs, err = n.GroupOffsets(ctx, "g")
		return err
	})
	assert.Equal(t, int64(42), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
	assert.Len(t, huntPullAll(t, c, "t", 0), len(plain))
	assert.Len(t, huntPullAll(t, c, "t", 1), len(delayed))
}
