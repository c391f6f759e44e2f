package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// A leader whose store failed can no longer apply the log, so it can never
// serve: it hands the leadership over, and a healthy node serves, while
// the broken node stays open.
func TestNode_LeaderWithABrokenStoreHandsOver(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("before")})
	li := c.leaderIndex() // after the calls above, which elections may have cut into
	leader := c.nodes[li]

	cluster.BreakStore(leader, errors.New("injected store failure"))
	eventually(t, 30*time.Second, func() error {
		for i, n := range c.nodes {
			if i != li && n.Status().Serving {
				return nil
			}
		}
		return fmt.Errorf("no healthy node serves; %s leads: %v", c.id(li), leader.Status().State)
	})
	require.NotSame(t, leader, c.waitLeader())
	// The healthy nodes take writes, though another election follows the
	// hand-over (sendBatch: only a serving node, never the broken one,
	// holds an engine).
	c.sendBatch(t, "t", 0, [][]byte{[]byte("after")})
	require.False(t, leader.Status().Serving)
}

// TestNode_LeaderOnAFullDiskRefusesWritesAsNotStored: a leader whose own
// store could not take a write with a margin to spare (its disk nearly
// full: store.Badger.Admit) refuses it before proposing it, with
// ErrNoSpace ("not stored"), and keeps serving: the write took no offset,
// no node's FSM broke, the tenure goes on, and once space is back the next
// write takes the next offset. Before, the write was proposed, and every
// node whose disk was as full broke applying it (a leader then hands over,
// and a cluster whose disks filled alike stopped until each node was
// reopened). One leader is watched throughout: a round an election cuts
// into is made again with the next leader.
func TestNode_LeaderOnAFullDiskRefusesWritesAsNotStored(t *testing.T) {
	var full atomic.Bool
	c := newCluster(t, 3, func(o *cluster.Options) {
		cluster.SetAdmitHook(o, func(b *store.Batch) error {
			if full.Load() && len(b.Entries) > 0 {
				return fmt.Errorf("%w: injected at the leader's admission", store.ErrNoSpace)
			}
			return nil
		})
	})
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("before")}) // at offset 0
	for round := 1; !fullDiskRound(t, c, &full, round); round++ {
		require.Less(t, round, 5, "an election cut into every round")
	}
	for _, n := range c.nodes {
		require.NoError(t, cluster.FSMError(n), "no node's FSM broke")
	}
}

// fullDiskRound is one round of
// TestNode_LeaderOnAFullDiskRefusesWritesAsNotStored, on the node that
// leads as it starts, with full set while it refuses. It reports false,
// with full cleared, when a call was answered as in an election
// (ErrNotLeader, ErrIndeterminate: the tenure may have ended for it), or
// when that node stopped leading before the round ended (its term moved
// on, or it stepped down): Raft elects one leader a term, so a node seen
// leading in the same term at both ends led throughout.
func fullDiskRound(t *testing.T, c *testCluster, full *atomic.Bool, round int) bool {
	t.Helper()
	ctx := context.Background()
	li := c.leaderIndex()
	leader := c.nodes[li]
	term := leader.Status().Term
	tenure := cluster.TenureOf(leader)
	elected := func(err error) bool {
		return errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrIndeterminate)
	}
	// The queue's end as this tenure's store holds it: an earlier round's
	// write of unknown outcome is settled there (startTenure).
	info, err := leader.Topic(ctx, "t")
	if elected(err) {
		return false
	}
	require.NoError(t, err)
	end := info.Queues[0].MaxOffset

	full.Store(true)
	for i := range 10 {
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%d", i)}}})
		if !errors.Is(err, equeue.ErrNoSpace) && elected(err) {
			full.Store(false)
			return false
		}
		require.ErrorIs(t, err, equeue.ErrNoSpace)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate)
		require.NotErrorIs(t, err, equeue.ErrNotLeader)
	}
	err = leader.CreateTopic(ctx, fmt.Sprintf("meta%d", round), 1)
	full.Store(false)
	if elected(err) {
		return false
	}
	require.NoError(t, err, "metadata goes in")

	r1, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	if elected(err) {
		return false
	}
	require.NoError(t, err)
	if st := leader.Status(); st.State != "Leader" || !ledThroughout(c, li, term) {
		return false
	}
	assert.Equal(t, end, r1.FirstOffset, "the refused writes took no offset")
	assert.Equal(t, tenure, cluster.TenureOf(leader), "the leader leads on in the same tenure")
	return true
}

// TestNode_FollowerResumesOnceItsStoreTakesWritesAgain: a follower whose
// store refuses the entries' writes for a full disk (ErrNoSpace) stops
// following the log, as before; once its store takes writes again it
// replays the entries it missed from its Raft log, without a reopen, even
// while the cluster commits nothing new (its timer retries), and holds
// every message. A store failure of another kind still leaves the node
// out until it is reopened, the timer notwithstanding.
func TestNode_FollowerResumesOnceItsStoreTakesWritesAgain(t *testing.T) {
	var refuse atomic.Pointer[error]
	c := newCluster(t, 3, func(o *cluster.Options) {
		if o.ID != "n2" {
			return
		}
		cluster.SetFSMWriteHook(o, func(b *store.Batch) error {
			if p := refuse.Load(); p != nil && len(b.Entries) > 0 {
				return *p
			}
			return nil
		})
		cluster.SetFullDiskRetry(o, 100*time.Millisecond)
	})
	c.createTopic(t, "t", 1)
	if c.leaderIndex() == 1 {
		c.handOver(t, 0)
	}
	leader := c.waitLeader()
	n2 := c.nodes[1]
	send := func(body string) {
		t.Helper()
		c.sendBatch(t, "t", 0, [][]byte{[]byte(body)}) // a majority applies it
	}
	stored := func(n *cluster.Node) int {
		recs, err := cluster.StoreOf(n).Read(store.QueueID{Topic: 1}, 0, 1000, 1000, 0) // the first topic's ID is 1
		require.NoError(t, err)
		return len(recs)
	}
	send("m0")
	eventually(t, 30*time.Second, func() error {
		if got := stored(n2); got != 1 {
			return fmt.Errorf("n2 holds %d of 1", got)
		}
		return nil
	})

	full := fmt.Errorf("%w: injected", store.ErrNoSpace)
	refuse.Store(&full)
	for i := 1; i <= 20; i++ {
		send(fmt.Sprintf("m%d", i))
	}
	eventually(t, 30*time.Second, func() error {
		if err := cluster.FSMError(n2); !errors.Is(err, store.ErrNoSpace) {
			return fmt.Errorf("n2's FSM: %v", err)
		}
		return nil
	})
	require.Equal(t, 1, stored(n2), "n2 stored nothing while its disk was full")
	// n2 was handed every entry: only its timer can bring it back now.
	eventually(t, 30*time.Second, func() error {
		if h, l := cluster.HandedIndex(n2), cluster.LastIndex(leader); h != l {
			return fmt.Errorf("n2 was handed entries up to %d of %d", h, l)
		}
		return nil
	})

	refuse.Store(nil)
	// Nothing new is committed: n2's timer replays what it missed.
	eventually(t, 30*time.Second, func() error {
		if err := cluster.FSMError(n2); err != nil {
			return err
		}
		if got := stored(n2); got != 21 {
			return fmt.Errorf("n2 holds %d of 21", got)
		}
		return nil
	})
	send("m21") // and it applies the next entry
	eventually(t, 30*time.Second, func() error {
		if err := cluster.FSMError(n2); err != nil {
			return err
		}
		if got := stored(n2); got != 22 {
			return fmt.Errorf("n2 holds %d of 22", got)
		}
		return nil
	})
	assert.Equal(t, 22, stored(leader))
	assert.Equal(t, cluster.StoredApplied(leader), cluster.StoredApplied(n2))

	// Another kind of store failure is not retried.
	broken := errors.New("injected I/O error")
	refuse.Store(&broken)
	send("m22")
	eventually(t, 30*time.Second, func() error {
		if err := cluster.FSMError(n2); err == nil {
			return errors.New("n2's FSM did not break")
		}
		return nil
	})
	refuse.Store(nil)
	send("m23")
	time.Sleep(200 * time.Millisecond)
	require.Error(t, cluster.FSMError(n2), "still broken: only a reopen (or a snapshot) brings it back")
	assert.Equal(t, 22, stored(n2))
}

// TestNode_EntryWithAKeyTooLongIsRefusedEverywhere: a batch entry holding a
// metadata key longer than any store takes (an older leader could propose
// one: a message ID of 70,000 bytes on a dedup topic) is refused alike by
// every node's FSM, as not stored, and the nodes go on; before, every
// node's FSM broke on it, for good.
func TestNode_EntryWithAKeyTooLongIsRefusedEverywhere(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 1)
	leader := c.waitLeader()
	// A key an older leader could propose that Badger takes (above what a
	// leader proposes now, store.MaxKeyBytes) is applied on every node, as
	// nodes of older versions apply it: no node treats it otherwise.
	taken := bytes.Repeat([]byte{'t'}, 61000)
	require.NoError(t, cluster.ApplyRaw(leader, cluster.TenureOf(leader), &store.Batch{Meta: []store.MetaOp{{Key: taken, Value: []byte("v")}}}))
	eventually(t, 30*time.Second, func() error {
		for _, n := range c.nodes {
			if _, err := cluster.StoreOf(n).GetMeta(taken); err != nil {
				return err
			}
		}
		return nil
	})
	long := &store.Batch{Meta: []store.MetaOp{{Key: bytes.Repeat([]byte{'k'}, 70000), Value: []byte("v")}}}
	err := cluster.ApplyRaw(leader, cluster.TenureOf(leader), long)
	require.ErrorIs(t, err, store.ErrBatchTooLarge)
	for _, n := range c.nodes {
		require.NoError(t, cluster.FSMError(n), "no node's FSM broke")
	}
	// The refusal ended the tenure; the leader serves on in a new one
	// (sendBatch: only a refusal or an unknown outcome, as in an
	// election, is made again).
	c.sendBatch(t, "t", 0, [][]byte{[]byte("after")})
}
