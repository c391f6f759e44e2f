package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// With the leader's log write held, a send to a dedup topic — and a
// second send of the same ID while the first is on its way — is answered
// only once the write is stored, the second as a duplicate of the first;
// a send after the release is a duplicate too, and every node keeps one
// copy. A duplicate answered early would say "stored" of an entry that a
// failed leader write could still lose.
func TestLeaderLog_DedupSendHeldIsAnsweredOnlyOnceStored(t *testing.T) {
	c, leader := newDedupCluster(t)
	ctx := context.Background()

	held, _ := c.logOf(leader)
	defer held.setHeld(false)
	first, second := c.sendTwiceHeld(t, leader, held)
	held.setHeld(false)

	a := <-first
	require.NoError(t, a.err)
	assert.False(t, a.res.Duplicate)
	assert.Equal(t, int64(1), a.res.FirstOffset)
	b := <-second
	require.NoError(t, b.err)
	assert.True(t, b.res.Duplicate, "the second send is a duplicate")
	assert.Equal(t, a.res.FirstOffset, b.res.FirstOffset, "at the first's offset")
	again, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "a", Body: []byte("a once more")}}})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, a.res.FirstOffset, again.FirstOffset)

	assert.Equal(t, map[int][]string{0: {"w", "a"}}, c.storedEverywhere(t, "d"))
}

// When the leader's write of a dedup send fails, the send (and a duplicate
// of it sent meanwhile) is not answered "stored"; the cluster recovers once
// the failed node is reopened, a re-send of the ID is answered in line
// with the first answers, and every node keeps exactly one copy.
func TestLeaderLog_DedupSendWhoseLeaderWriteFails(t *testing.T) {
	c, leader := newDedupCluster(t)

	held, failing := c.logOf(leader)
	defer held.setHeld(false)
	first, second := c.sendTwiceHeld(t, leader, held)
	failing.fail(errDiskGone)
	held.setHeld(false)

	var answers []appendOutcome
	for _, ch := range []<-chan appendOutcome{first, second} {
		select {
		case o := <-ch:
			requireOutcome(t, o.err)
			// The leader never stored the entry: it cannot have applied it.
			require.Error(t, o.err, "a send whose leader write failed answered stored: %+v", o.res)
			answers = append(answers, o)
		case <-time.After(30 * time.Second):
			t.Fatal("a send whose leader write failed is never answered")
		}
	}

	// A healthy node takes over while the failed one is still open.
	c.waitOtherLeader(leader)
	res := c.resendUntilAnswered("d", equeue.Message{ID: "a", Body: []byte("a after recovery")})
	c.reopenBroken(c.indexOf(leader))
	for _, o := range answers {
		if errors.Is(o.err, equeue.ErrNotLeader) {
			assert.False(t, res.Duplicate, "a send answered not stored (%v) was stored after all", o.err)
		}
	}
	stored := c.storedEverywhere(t, "d")
	require.Len(t, stored[0], 2, "w and one a: %q", stored[0])
	assert.Equal(t, "w", stored[0][0])
	assert.Contains(t, []string{"a", "a after recovery"}, stored[0][1])
	if res.Duplicate {
		assert.Equal(t, "a", stored[0][1], "a duplicate's original is kept")
	} else {
		assert.Equal(t, "a after recovery", stored[0][1])
	}
	assert.Equal(t, int64(1), res.FirstOffset)
}

// A duplicate sent while the first send's entry is on its way shares the
// first's fate. Here the entry reaches no follower (they refuse every
// command entry of the leader's term) and the leader's own write fails:
// the entry is lost, and the next message takes its offset. A duplicate
// answered "stored at offset 1" would be contradicted by what every node
// holds at offset 1.
func TestLeaderLog_DedupDuplicateOfALostSendIsNotAnsweredStored(t *testing.T) {
	c, leader := newDedupCluster(t)

	st := leader.Status()
	refuse := func(l *raft.Log) bool {
		return l.Type == raft.LogCommand && l.Term == st.Term && l.Index > st.LastLogIndex
	}
	for _, n := range c.nodes {
		if n != leader {
			_, f := c.logOf(n)
			f.refuse.Store(&refuse)
		}
	}
	held, failing := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	first := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	eventually(t, 10*time.Second, func() error {
		if _, ok := held.firstBlocked(); !ok {
			return errors.New("the leader wrote nothing yet")
		}
		return nil
	})
	second := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a again")})
	whileHeld(t, func() {
		notAnswered(t, first, "the send")
		notAnswered(t, second, "the duplicate send")
	})
	failing.fail(errDiskGone)
	held.setHeld(false)
	for _, ch := range []<-chan appendOutcome{first, second} {
		select {
		case o := <-ch:
			requireOutcome(t, o.err)
			// Not fatal: what the nodes keep below shows the contradiction.
			assert.Error(t, o.err, "a send stored nowhere answered stored: %+v", o.res)
		case <-time.After(30 * time.Second):
			t.Fatal("a send whose leader write failed is never answered")
		}
	}
	c.waitOtherLeader(leader)
	b := c.resendUntilAnswered("d", equeue.Message{ID: "b", Body: []byte("b")})
	assert.Equal(t, int64(1), b.FirstOffset, "the lost entry's offset is taken again")
	a := c.resendUntilAnswered("d", equeue.Message{ID: "a", Body: []byte("a after recovery")})
	assert.False(t, a.Duplicate, "the lost send is not a duplicate")
	c.reopenBroken(c.indexOf(leader))
	assert.Equal(t, map[int][]string{0: {"w", "b", "a after recovery"}}, c.storedEverywhere(t, "d"))
}

// A delayed send whose entry is held is not delivered by any node before
// the leader's write is released — not even once its delay has passed —
// and is delivered exactly once after.
func TestLeaderLog_DelayedSendHeldIsDeliveredOnceAfterTheRelease(t *testing.T) {
	c := newFaultCluster(t, nil)
	ctx := context.Background()
	c.createTopic(t, "dl", 1)
	c.sendBatch(t, "dl", 0, [][]byte{[]byte("w")})
	c.waitConverged()
	leader := c.waitLeader()

	held, _ := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	const delay = 200 * time.Millisecond
	sent := sendAsync(leader, "dl", &equeue.Message{Body: []byte("later"), Delay: delay})
	index := c.holdLeader(leader)
	pulled := func() []string {
		res, err := leader.Pull(ctx, &equeue.PullRequest{Topic: "dl", Queue: 0, Offset: 0, Max: 10})
		require.NoError(t, err)
		var out []string
		for _, m := range res.Messages {
			out = append(out, string(m.Body))
		}
		return out
	}
	// Held for longer than the delay: still nothing to deliver.
	for range 2 {
		whileHeld(t, func() {
			c.noneApplied(t, index)
			notAnswered(t, sent, "the delayed send")
			require.Equal(t, []string{"w"}, pulled())
		})
	}
	held.setHeld(false)
	o := <-sent
	require.NoError(t, o.err)
	assert.True(t, o.res.Delayed)
	eventually(t, 10*time.Second, func() error {
		if got := pulled(); len(got) != 2 {
			return fmt.Errorf("pulled %q", got)
		}
		return nil
	})
	assert.Equal(t, []string{"w", "later"}, pulled(), "delivered once")
	assert.Equal(t, map[int][]string{0: {"w", "later"}}, c.storedEverywhere(t, "dl"))
}

// newDedupCluster starts a fault cluster with a dedup topic "d" of one
// queue that holds one message, "w", on every node.
func newDedupCluster(t *testing.T) (*faultCluster, *cluster.Node) {
	t.Helper()
	c := newFaultCluster(t, nil)
	ctx := context.Background()
	c.createTopicWith(t, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})
	// Sent again whatever its outcome: the window stores it once.
	c.onLeader(t, "append w", func(e *equeue.Engine) error {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "w", Body: []byte("w")}}})
		return err
	}, nil)
	c.waitConverged()
	return c, c.waitLeader()
}

// sendTwiceHeld holds the leader's log write, sends ID "a" and, once its
// entry is on every node and in Raft's commit index, "a" again; it requires
// that neither is answered and no node applies the entry while held, and
// returns both sends' outcomes with the write still held.
func (fc *faultCluster) sendTwiceHeld(t *testing.T, leader *cluster.Node, held *heldLog) (first, second <-chan appendOutcome) {
	t.Helper()
	held.setHeld(true)
	first = sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	index := fc.holdLeader(leader)
	second = sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a again")})
	whileHeld(t, func() {
		fc.noneApplied(t, index)
		notAnswered(t, first, "the send")
		notAnswered(t, second, "the duplicate send")
	})
	return first, second
}
