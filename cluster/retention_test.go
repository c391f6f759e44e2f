package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// rawFirst opens a closed node's Badger store and returns the first stored
// offset of the queue whose records end at next.
func rawFirst(t *testing.T, dir string, next uint64) uint64 {
	t.Helper()
	st, err := store.OpenBadger(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	for id := range uint32(64) {
		first, end, ok, err := st.Bounds(store.QueueID{Topic: id})
		require.NoError(t, err)
		if ok && end == next {
			return first
		}
	}
	t.Fatalf("no queue ends at %d", next)
	return 0
}

// Retention runs on the leader's engine; its trims (the watermark and the
// deletion of records) are replicated, so every node keeps the same
// queue, and a new leader carries on from the trimmed low watermark.
func TestCluster_RetentionTrimsEveryNode(t *testing.T) {
	c := newCluster(t, 3, func(o *cluster.Options) {
		o.Engine = &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	})
	ctx := context.Background()
	c.createTopicWith(t, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})
	h := newHistory()
	nodes := func() []*cluster.Node { return c.nodes }
	for i := range 50 {
		h.sendAcked(ctx, c, nodes, "t", 0, fmt.Sprintf("old-%d", i))
	}
	time.Sleep(20 * time.Millisecond) // the old messages are older than MaxAge below
	cut := time.Now()
	for i := range 10 {
		h.sendAcked(ctx, c, nodes, "t", 0, fmt.Sprintf("new-%d", i))
	}
	e, err := c.waitLeader().Engine()
	require.NoError(t, err)
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(cut) + 10*time.Millisecond})
	require.NoError(t, err)
	require.Equal(t, int64(50), res.Deleted)

	// Another node leads: it sees the trimmed queue.
	old := c.leaderIndex()
	c.stop(old)
	newLeader := c.waitLeader()
	info, err := newLeader.Topic(ctx, "t")
	require.NoError(t, err)
	require.Len(t, info.Queues, 1)
	assert.Equal(t, int64(50), info.Queues[0].MinOffset)
	assert.Equal(t, int64(60), info.Queues[0].MaxOffset)
	c.start(old, false)
	c.waitConverged()
	c.closeAll()
	for i, dir := range c.dirs {
		// The records themselves are gone from every node's store, not
		// only hidden by the replicated watermark.
		assert.Equal(t, uint64(50), rawFirst(t, dir, 60), "node %d deleted the records", i+1)
		first, vals := readFrom(t, dir, "t", 0)
		assert.Equal(t, int64(50), first, "node %d trimmed", i+1)
		assert.Len(t, vals, 10, "node %d keeps the new messages", i+1)
	}
}
