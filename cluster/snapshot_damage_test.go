package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// zeroOlderValueLog zeroes 8 KiB in the middle of the first value-log file
// of a node's store, one it no longer appends to: bytes the disk lost under
// a segment whose key Badger still holds. Badger's value checksum then
// fails for that segment alone (in the file it appends to, Badger would
// cut the file at the damage when it opens). The node may be running:
// Badger reads its value log through a shared memory map, which sees the
// change.
func zeroOlderValueLog(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "engine", "*.vlog"))
	require.NoError(t, err)
	require.Greater(t, len(files), 1, "the value log moved on to another file")
	f, err := os.OpenFile(files[0], os.O_RDWR, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	require.Greater(t, fi.Size(), int64(200_000), "the segments are in the value log")
	_, err = f.WriteAt(make([]byte, 8<<10), fi.Size()/2)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// storedWithCorrupt opens the engine directory of a closed node as a plain
// engine and returns, per queue of topic, its bodies by offset and the
// offsets reads report corrupt.
func storedWithCorrupt(t *testing.T, dir, topic string) (map[int]map[int64]string, map[int][]int64) {
	t.Helper()
	e, err := equeue.Open(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	info, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	bodies, corrupt := map[int]map[int64]string{}, map[int][]int64{}
	for q := range info.Queues {
		bodies[q] = map[int64]string{}
		for off := int64(0); ; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: equeue.MaxPullBatch})
			require.NoError(t, err)
			for _, m := range res.Messages {
				bodies[q][m.Offset] = string(m.Body)
			}
			corrupt[q] = append(corrupt[q], res.Corrupt...)
			if res.NextOffset <= off {
				break
			}
			off = res.NextOffset
		}
		slices.Sort(corrupt[q])
	}
	return bodies, corrupt
}

// A leader whose store holds a damaged segment (value-log bytes the disk
// lost while it ran) still takes snapshots, so it compacts its log and a
// follower too far behind installs one: the damaged segment is carried as
// damaged, and the follower reports the same offsets corrupt as the
// leader, and holds the same messages otherwise; it reopens that store as
// it is (the carried damage is as it was written), where rebuilding it
// from the same snapshot would mend nothing. Before, every snapshot of
// that store failed: the leader's log was never compacted again, and a
// follower was sent only snapshots taken before the damage.
func TestCluster_SnapshotOfAStoreWithADamagedSegment(t *testing.T) {
	c := newCluster(t, 3, func(o *cluster.Options) {
		snapshotOften(o)
		cluster.SetWALSegmentSize(o, 16<<10) // the log's head goes once compacted
		bo := store.DefaultBadgerOptions()
		bo.ValueLogFileSize = 1 << 20 // the least Badger takes
		o.Badger = &bo
	})
	c.createTopic(t, "t", 2)
	sendBodies(t, c, "t", 0, 10000)
	c.waitConverged()
	l := c.leaderIndex()
	damaged, behind := (l+1)%3, (l+2)%3

	zeroOlderValueLog(t, c.dirs[damaged])
	c.lead(damaged)

	// The node behind must catch up from the damaged node's snapshot, not
	// from the third node's (whose store holds no damage): should an
	// election move the leadership while it catches up, it is stopped and
	// made to fall behind again.
	after := 0 // messages sent to queue 1 while the node was behind
	for tries := 0; ; tries++ {
		require.Less(t, tries, 10, "%s did not lead throughout a catch-up of %s in 10 tries", c.id(damaged), c.id(behind))
		behindIndex := c.nodes[behind].Status().LastLogIndex
		c.stop(behind)
		for range 200 {
			c.sendBatch(t, "t", 1, [][]byte{fmt.Appendf(nil, "after %d", after)})
			after++
		}
		eventually(t, 30*time.Second, func() error {
			if first := c.nodes[damaged].Status().FirstLogIndex; first <= behindIndex+1 {
				return fmt.Errorf("the damaged node's log still starts at %d: it took no snapshot since the damage", first)
			}
			return nil
		})
		c.lead(damaged) // again, should an election have moved the leadership
		term := c.nodes[damaged].Status().Term
		c.start(behind, false)
		c.waitConverged()
		if ledThroughout(c, damaged, term) {
			break
		}
		t.Logf("an election moved the leadership from %s (term %d) while %s caught up: again", c.id(damaged), term, c.id(behind))
	}
	assert.Positive(t, c.nodes[behind].Status().SnapshotsInstalled, "caught up from a snapshot")
	c.closeAll()

	wantBodies, wantCorrupt := storedWithCorrupt(t, c.dirs[damaged], "t")
	gotBodies, gotCorrupt := storedWithCorrupt(t, c.dirs[behind], "t")
	require.NotEmpty(t, slices.Concat(wantCorrupt[0], wantCorrupt[1]), "the damaged segment reads as corrupt records")
	assert.Equal(t, wantCorrupt, gotCorrupt, "the follower reports the leader's corrupt offsets")
	for q := range 2 {
		assert.Equal(t, 5000+after*q-len(wantCorrupt[q]), len(wantBodies[q]), "queue %d: every message but the corrupt ones", q)
		assert.True(t, maps.Equal(wantBodies[q], gotBodies[q]), "queue %d: the follower holds the leader's messages", q)
	}

	c.start(behind, false)
	c.stop(behind)
	aside, err := filepath.Glob(filepath.Join(c.dirs[behind], "engine.damaged-*"))
	require.NoError(t, err)
	assert.Empty(t, aside, "the store restored from the snapshot is kept")
	_, stillCorrupt := storedWithCorrupt(t, c.dirs[behind], "t")
	assert.Equal(t, wantCorrupt, stillCorrupt)
}

// ledThroughout reports whether node i still leads in term, as every
// running node sees it: no other node led since i was seen leading in
// term (Raft elects one leader a term), so a node that caught up since
// then did from i's log or snapshot.
func ledThroughout(c *testCluster, i int, term uint64) bool {
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		if st := n.Status(); st.Term != term || st.LeaderID != c.id(i) {
			return false
		}
	}
	return c.nodes[i].Status().Serving
}

// ledThroughout tells a node that led since it was seen leading from one
// that lost the leadership in between, even when it leads again.
func TestCluster_LedThroughout(t *testing.T) {
	c := newCluster(t, 3, nil)
	var term uint64
	eventually(t, 30*time.Second, func() error {
		c.lead(0)
		term = c.nodes[0].Status().Term
		if !ledThroughout(c, 0, term) {
			return fmt.Errorf("%s does not lead in term %d as every node sees it", c.id(0), term)
		}
		return nil
	})
	c.lead(1)
	assert.False(t, ledThroughout(c, 0, term), "%s leads", c.id(1))
	c.lead(0)
	assert.False(t, ledThroughout(c, 0, term), "%s leads again, in a later term", c.id(0))
}
