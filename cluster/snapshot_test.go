package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// snapshotOften makes nodes snapshot every few entries and keep a short log.
func snapshotOften(o *cluster.Options) {
	o.SnapshotThreshold = 32
	o.TrailingLogs = 8
	o.SnapshotInterval = 50 * time.Millisecond
}

// A node that was down while the others wrote more than their trailing
// logs catches up from a snapshot plus the log, on both log stores.
// raft-wal drops a log's head only a whole segment at a time (and still
// reads entries of the segment it writes), so its segments are small here.
func TestCluster_SnapshotInstallOnNodeBehind(t *testing.T) {
	for _, ls := range []string{cluster.LogStoreWAL, cluster.LogStoreBolt} {
		t.Run(ls, func(t *testing.T) {
			testSnapshotInstall(t, func(o *cluster.Options) {
				snapshotOften(o)
				o.LogStore = ls
				cluster.SetWALSegmentSize(o, 16<<10)
			})
		})
	}
}

func testSnapshotInstall(t *testing.T, mod func(*cluster.Options)) {
	c := newCluster(t, 3, mod)
	ctx := context.Background()
	c.createTopicWith(t, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})
	l := c.leaderIndex()
	down := (l + 1) % 3
	downIndex := c.nodes[down].Status().LastLogIndex
	c.stop(down)

	h := newHistory()
	nodes := func() []*cluster.Node { return c.nodes }
	for i := range 300 {
		h.sendAcked(ctx, c, nodes, "t", 0, "m"+strconv.Itoa(i))
	}
	require.Len(t, h.acked, 300)
	// The leader compacted its log past what the stopped node has.
	eventually(t, 30*time.Second, func() error {
		if _, err := c.waitLeader().Engine(); err != nil {
			return err
		}
		for _, n := range c.nodes {
			if n != nil && n.Status().Serving {
				if first := firstLogIndex(t, n); first <= downIndex+1 {
					return fmt.Errorf("leader's log still starts at %d", first)
				}
			}
		}
		return nil
	})
	c.start(down, false)
	c.waitConverged()
	assert.Positive(t, c.nodes[down].Status().SnapshotsInstalled, "caught up from a snapshot")
	// It serves as leader with what it restored. When an election (or a
	// lapse of its lease) cuts into the append, it is made leader again and
	// the append made again on it: sent with its own ID to a topic with a
	// dedup window, an append that took is answered as a duplicate, with
	// the offset it took.
	var res equeue.AppendResult
	eventually(t, 60*time.Second, func() error {
		c.lead(down)
		var err error
		res, err = c.nodes[down].Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "after", Body: []byte("after")}}})
		if errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrIndeterminate) {
			return fmt.Errorf("%s append: %w", c.id(down), err)
		}
		require.NoError(t, err, "%s append", c.id(down))
		return nil
	})
	assert.Equal(t, int64(300), res.FirstOffset)
	h.acked["after"] = ack{queue: 0, offset: 300}
	c.waitConverged()
	c.closeAll()
	var stored []map[int][]string
	for _, dir := range c.dirs {
		stored = append(stored, readAll(t, dir, "t"))
	}
	h.check(t, stored)
}

func firstLogIndex(t *testing.T, n *cluster.Node) uint64 {
	t.Helper()
	return n.Status().FirstLogIndex
}
