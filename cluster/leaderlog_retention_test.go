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
	"github.com/equeue-go/equeue/store"
)

// retentionSetup creates topic "r" with 50 messages older than the
// returned cut and 10 newer ones, and returns its store queue ID.
func retentionSetup(t *testing.T, c *faultCluster) (store.QueueID, time.Time) {
	t.Helper()
	c.createTopic(t, "r", 1)
	batch := func(tag string, n int) {
		var bodies [][]byte
		for i := range n {
			bodies = append(bodies, fmt.Appendf(nil, "%s-%d", tag, i))
		}
		c.sendBatch(t, "r", 0, bodies)
	}
	batch("old", 50)
	time.Sleep(20 * time.Millisecond) // the old messages are older than the cut
	cut := time.Now()
	batch("new", 10)
	c.waitConverged()
	leader := c.waitLeader()
	for id := range uint32(64) {
		q := store.QueueID{Topic: id}
		if _, next, ok, err := cluster.StoreOf(leader).Bounds(q); err == nil && ok && next == 60 {
			return q, cut
		}
	}
	t.Fatal("no queue of 60 records")
	return store.QueueID{}, cut
}

// bounds is where a node's copy of a queue starts: its low watermark (what
// an engine opened on it shows) and its first stored record.
type bounds struct{ watermark, firstRecord uint64 }

// firstOffsets returns where each running node's copy of q starts.
func (fc *faultCluster) firstOffsets(t *testing.T, q store.QueueID) map[string]bounds {
	t.Helper()
	out := map[string]bounds{}
	for _, n := range fc.nodes {
		if n == nil {
			continue
		}
		first, _, ok, err := cluster.StoreOf(n).Bounds(q)
		require.NoError(t, err)
		require.True(t, ok, "%s holds the queue", n.ID())
		w, err := cluster.Watermark(n, q)
		require.NoError(t, err)
		out[n.ID()] = bounds{w, first}
	}
	return out
}

func sameFirst(ids []string, first uint64) map[string]bounds {
	out := map[string]bounds{}
	for _, id := range ids {
		out[id] = bounds{first, first}
	}
	return out
}

func (fc *faultCluster) ids() []string {
	var out []string
	for i := range fc.nodes {
		out = append(out, fc.id(i))
	}
	return out
}

// A retention trim whose entry is held moves no node's first offset — nor
// the leader engine's low watermark — until the leader's write is
// released; then every node trims the same.
func TestLeaderLog_RetentionTrimHeldMovesNothingUntilStored(t *testing.T) {
	c := newFaultCluster(t, func(o *cluster.Options) {
		o.Engine = &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	})
	q, cut := retentionSetup(t, c)
	leader := c.waitLeader()
	ctx := context.Background()
	e, err := leader.Engine()
	require.NoError(t, err)

	held, _ := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	type trim struct {
		res equeue.RetentionResult
		err error
	}
	done := make(chan trim, 1)
	go func() {
		res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(cut) + 10*time.Millisecond})
		done <- trim{res, err}
	}()
	index := c.holdLeader(leader)
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, done, "the retention pass")
		require.Equal(t, sameFirst(c.ids(), 0), c.firstOffsets(t, q))
		info, err := leader.Topic(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, int64(0), info.Queues[0].MinOffset, "the leader's low watermark")
	})
	held.setHeld(false)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, int64(50), r.res.Deleted)
	c.waitConverged()
	assert.Equal(t, sameFirst(c.ids(), 50), c.firstOffsets(t, q))
	c.checkTrimmedAlike(t, 50)
}

// checkTrimmedAlike closes every node and requires that each keeps topic
// "r" from want on, the same messages.
func (fc *faultCluster) checkTrimmedAlike(t *testing.T, want int64) {
	t.Helper()
	fc.waitConverged()
	fc.closeAll()
	var bodies0 []string
	for i, dir := range fc.dirs {
		first, bodies := readFrom(t, dir, "r", 0)
		assert.Equal(t, want, first, "node %d's low watermark", i+1)
		assert.Len(t, bodies, int(60-want), "node %d", i+1)
		if i == 0 {
			bodies0 = bodies
		} else {
			assert.Equal(t, bodies0, bodies, "node %d keeps what node 1 keeps", i+1)
		}
	}
}

// A retention trim whose leader write fails is not answered as done; no
// node trims while the failed node leads, and once it is reopened every
// node holds the same queue, trimmed or not as the answer allows.
func TestLeaderLog_RetentionTrimWhoseLeaderWriteFails(t *testing.T) {
	c := newFaultCluster(t, func(o *cluster.Options) {
		o.Engine = &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	})
	q, cut := retentionSetup(t, c)
	leader := c.waitLeader()
	ctx := context.Background()
	e, err := leader.Engine()
	require.NoError(t, err)

	held, failing := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	done := make(chan error, 1)
	go func() {
		_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(cut) + 10*time.Millisecond})
		done <- err
	}()
	index := c.holdLeader(leader)
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, done, "the retention pass")
		require.Equal(t, sameFirst(c.ids(), 0), c.firstOffsets(t, q))
	})
	failing.fail(errDiskGone)
	held.setHeld(false)
	select {
	case err := <-done:
		requireOutcome(t, err)
		require.Error(t, err, "a trim whose leader write failed answered done")
	case <-time.After(30 * time.Second):
		t.Fatal("a trim whose leader write failed is never answered")
	}
	// The node that could not store the entry never applies it.
	whileHeld(t, func() {
		require.Less(t, cluster.StoredApplied(leader), index)
		first, _, _, err := cluster.StoreOf(leader).Bounds(q)
		require.NoError(t, err)
		require.Zero(t, first)
		w, err := cluster.Watermark(leader, q)
		require.NoError(t, err)
		require.Zero(t, w)
	})

	c.waitOtherLeader(leader)
	c.reopenBroken(c.indexOf(leader))
	c.waitConverged()
	firsts := c.firstOffsets(t, q)
	// The followers held the trim in their logs: a new leader may commit
	// it (the caller was told "unknown"), but then on every node.
	want := firsts[c.id(0)].watermark
	require.Contains(t, []uint64{0, 50}, want)
	assert.Equal(t, sameFirst(c.ids(), want), firsts)
	c.checkTrimmedAlike(t, int64(want))
}
