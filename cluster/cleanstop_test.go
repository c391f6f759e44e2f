package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/crashsim"
	"github.com/equeue-go/equeue/store"
)

// sendBodies sends count messages with distinct bodies to topic, from
// body number from on, in batches of 100 alternating between queues 0 and
// 1, through whichever node leads: each is stored once, in order, though
// an election cuts into the sends (sendBatch).
func sendBodies(t *testing.T, c *testCluster, topic string, from, count int) {
	t.Helper()
	for i := from; i < from+count; i += 100 {
		var bodies [][]byte
		for j := i; j < min(i+100, from+count); j++ {
			bodies = append(bodies, fmt.Appendf(nil, "message %06d %0120d", j, j))
		}
		c.sendBatch(t, topic, i/100%2, bodies)
	}
}

// cutValueLog cuts the tail of the largest value-log file of a closed
// node's store, as a machine crash loses the bytes the OS had not written.
func cutValueLog(t *testing.T, dir string) {
	t.Helper()
	crashsim.CutValueLogTail(t, filepath.Join(dir, "engine"), 100_000, 20_000)
}

// openClosedStore opens a closed node's store as the node does; the test
// closes it at its end.
func openClosedStore(t *testing.T, dir string) *store.Badger {
	t.Helper()
	o := store.DefaultBadgerOptions()
	o.SegmentBytes = cluster.NodeSegmentBytes
	s, err := store.OpenBadger(filepath.Join(dir, "engine"), &o)
	require.NoError(t, err)
	return s
}

// verifyStore opens a closed node's store and verifies its records.
func verifyStore(t *testing.T, dir string) error {
	t.Helper()
	s := openClosedStore(t, dir)
	defer func() { require.NoError(t, s.Close()) }()
	return s.VerifyRecords()
}

// A follower whose store lost value-log bytes in an unclean stop finds it
// when it opens, moves the store aside and rebuilds it from the Raft log:
// afterwards it holds exactly what the other nodes hold. Without the
// damage, an unclean stop keeps the store.
func TestNode_RebuildsAStoreDamagedByAnUncleanStop(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 2)
	sendBodies(t, c, "t", 0, 3000)
	// State beside the records, which the rebuilt store must hold too:
	// dedup entries, messages still delayed, a group's offsets, each
	// written across elections (onLeader). A delayed message whose send an
	// election left unknown is sent again and may be stored twice: every
	// node then holds both, and the test counts none of them (a message
	// with an ID sent again is answered as a duplicate).
	c.createTopicWith(t, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})
	for i := range 50 {
		for _, m := range []equeue.Message{
			{ID: fmt.Sprintf("id-%d", i), Body: []byte("deduplicated")},
			{Body: []byte("delayed"), Delay: time.Hour},
		} {
			c.onLeader(t, "append to d", func(e *equeue.Engine) error {
				sent := m
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{&sent}})
				return err
			}, nil)
		}
	}
	c.commitOffsets(t, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 700, {Topic: "t", Queue: 1}: 300})
	c.waitConverged()
	li := c.leaderIndex() // after the sends, which elections may have cut into
	f := (li + 1) % 3
	other := (li + 2) % 3

	// An unclean stop with nothing lost: the store is verified and kept.
	require.NoError(t, c.nodes[other].CloseUnclean())
	c.nodes[other] = nil
	c.start(other, false)

	require.NoError(t, c.nodes[f].CloseUnclean())
	c.nodes[f] = nil
	cutValueLog(t, c.dirs[f])
	require.ErrorIs(t, verifyStore(t, c.dirs[f]), store.ErrDamaged)
	c.start(f, false)
	c.waitConverged()
	sendBodies(t, c, "t", 3000, 200)
	c.waitConverged()
	c.closeAll()

	aside, err := filepath.Glob(filepath.Join(c.dirs[f], "engine.damaged-*"))
	require.NoError(t, err)
	require.Len(t, aside, 1, "the damaged store is kept aside")
	for _, i := range []int{li, other} {
		kept, err := filepath.Glob(filepath.Join(c.dirs[i], "engine.damaged-*"))
		require.NoError(t, err)
		require.Empty(t, kept, "%s kept its store", c.id(i))
	}
	want := readAll(t, c.dirs[li], "t")
	require.Equal(t, 3200, len(want[0])+len(want[1]))
	wantMeta := replicatedMeta(t, c.dirs[li])
	require.NotEmpty(t, wantMeta)
	for i := range c.dirs {
		require.NoError(t, verifyStore(t, c.dirs[i]), "%s", c.id(i))
		require.Equal(t, want, readAll(t, c.dirs[i], "t"), "%s holds what the leader holds", c.id(i))
		require.Equal(t, readAll(t, c.dirs[li], "d"), readAll(t, c.dirs[i], "d"), "%s holds the dedup topic's records", c.id(i))
		require.Equal(t, wantMeta, replicatedMeta(t, c.dirs[i]), "%s holds the leader's metadata: dedup entries, delayed messages, offsets", c.id(i))
	}
	// The rebuilt node's dedup entries still answer duplicates.
	c.start(f, false)
	c.start(li, false)
	c.start(other, false)
	// Sent again across elections when refused; of unknown outcome, it was
	// stored (not answered as a duplicate) when "d" ends with it.
	var res equeue.AppendResult
	c.onLeader(t, "append id-7 again", func(e *equeue.Engine) (err error) {
		res, err = e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "id-7", Body: []byte("again")}}})
		return err
	}, func(failed *equeue.Engine) bool { return c.queueEndsWith(t, failed, "d", 0, []byte("again")) })
	require.True(t, res.Duplicate, "id-7 answered as a duplicate, not stored again")
}

// replicatedMeta returns every metadata pair a closed node's store holds
// but the node's own state (its applied index, its clean-stop mark).
func replicatedMeta(t *testing.T, dir string) map[string]string {
	t.Helper()
	s := openClosedStore(t, dir)
	defer func() { require.NoError(t, s.Close()) }()
	out := map[string]string{}
	require.NoError(t, s.ScanMeta(nil, func(k, v []byte) error {
		if !bytes.HasPrefix(k, []byte("\x00cluster/")) {
			out[string(k)] = string(v)
		}
		return nil
	}))
	return out
}

// hasCleanMark reports whether a closed node's store is marked clean.
func hasCleanMark(t *testing.T, dir string) bool {
	t.Helper()
	s, err := store.OpenBadger(filepath.Join(dir, "engine"), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, err = s.GetMeta(cluster.CleanKey)
	if err == nil {
		return true
	}
	require.ErrorIs(t, err, store.ErrNotFound)
	return false
}

// Close marks the store clean, which the next open reads (to tell damage
// the disk did from a crash's) and removes before anything is written, so
// a crash after it is told as such; an unclean stop leaves no mark.
func TestNode_CleanStopMark(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.createTopic(t, "t", 2)
	sendBodies(t, c, "t", 0, 300)
	c.stop(0)
	require.True(t, hasCleanMark(t, c.dirs[0]))

	c.start(0, false)
	sendBodies(t, c, "t", 300, 100)
	require.NoError(t, c.nodes[0].CloseUnclean())
	c.nodes[0] = nil
	require.False(t, hasCleanMark(t, c.dirs[0]), "the open removed the mark")

	c.start(0, false)
	c.waitLeader()
	c.stop(0)
	require.True(t, hasCleanMark(t, c.dirs[0]))
	got := readAll(t, c.dirs[0], "t")
	require.Equal(t, 400, len(got[0])+len(got[1]))
}

// pullAllAsLeader makes node i the serving leader and reads every queue
// of topic through it; it returns, per queue, the bodies it delivered by
// offset and the offsets it reported corrupt. When an election (or a
// lapse of the lease) cuts into the reads, node i is made leader again and
// reads them all again: they all come from node i.
func pullAllAsLeader(t *testing.T, c *testCluster, i int, topic string, queues int) (map[int]map[int64]string, map[int][]int64) {
	t.Helper()
	var bodies map[int]map[int64]string
	var corrupt map[int][]int64
	eventually(t, 60*time.Second, func() error {
		c.lead(i)
		var err error
		bodies, corrupt, err = pullAll(c.nodes[i], topic, queues)
		if errors.Is(err, equeue.ErrNotLeader) {
			return fmt.Errorf("%s read %s: %w", c.id(i), topic, err)
		}
		require.NoError(t, err, "%s read %s", c.id(i), topic)
		return nil
	})
	return bodies, corrupt
}

// pullAll reads every queue of topic through the serving node n and
// returns, per queue, the bodies it delivered by offset and the offsets it
// reported corrupt.
func pullAll(n *cluster.Node, topic string, queues int) (map[int]map[int64]string, map[int][]int64, error) {
	ctx := context.Background()
	bodies, corrupt := map[int]map[int64]string{}, map[int][]int64{}
	for q := range queues {
		bodies[q] = map[int64]string{}
		for off := int64(0); ; {
			res, err := n.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: equeue.MaxPullBatch})
			if err != nil {
				return nil, nil, err
			}
			for _, m := range res.Messages {
				bodies[q][m.Offset] = string(m.Body)
			}
			corrupt[q] = append(corrupt[q], res.Corrupt...)
			if res.NextOffset <= off {
				break
			}
			off = res.NextOffset
		}
	}
	return bodies, corrupt, nil
}

// A follower whose store was damaged while it was stopped cleanly (bytes
// of its value log the disk let rot) finds it when it opens, as after an
// unclean stop, and rebuilds the store from the Raft snapshot and log:
// made leader, it serves every message, none corrupt, and holds what the
// other nodes hold. Before, a clean stop skipped the check, and the node
// served the damaged segments' records as corrupt though its peers held
// them sound.
func TestNode_RebuildsAStoreDamagedAfterACleanStop(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 2)
	sendBodies(t, c, "t", 0, 3000)
	c.waitConverged()
	li := c.leaderIndex()
	f := (li + 1) % 3

	c.stop(f)
	require.True(t, hasCleanMark(t, c.dirs[f]), "a clean stop")
	zeroOlderValueLog(t, c.dirs[f])
	require.ErrorIs(t, verifyStore(t, c.dirs[f]), store.ErrDamaged)
	c.start(f, false)
	c.waitConverged()
	bodies, corrupt := pullAllAsLeader(t, c, f, "t", 2)
	require.Empty(t, corrupt[0], "queue 0: no corrupt record served")
	require.Empty(t, corrupt[1], "queue 1: no corrupt record served")
	require.Len(t, bodies[0], 1500)
	require.Len(t, bodies[1], 1500)
	c.closeAll()

	aside, err := filepath.Glob(filepath.Join(c.dirs[f], "engine.damaged-*"))
	require.NoError(t, err)
	require.Len(t, aside, 1, "the damaged store is kept aside")
	want := readAll(t, c.dirs[li], "t")
	require.NoError(t, verifyStore(t, c.dirs[f]))
	require.Equal(t, want, readAll(t, c.dirs[f], "t"), "the rebuilt node holds what the leader holds")
}
