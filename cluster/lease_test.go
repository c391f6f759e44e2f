package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A leader that does not hold its lease serves nothing: reads and writes
// are refused with a *NotLeaderError (nothing done), and served again
// once it holds the lease.
func TestNode_ServesOnlyWithItsLease(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("a")})
	l := c.waitLeader()

	cluster.DropLease(l)
	var nl *cluster.NotLeaderError
	_, err := l.Engine()
	require.True(t, errors.As(err, &nl), "Engine: %v", err)
	_, err = l.Pull(t.Context(), &equeue.PullRequest{Topic: "t"})
	require.True(t, errors.As(err, &nl), "Pull: %v", err)
	require.ErrorIs(t, err, equeue.ErrNotLeader)
	_, err = l.Route(t.Context(), "t")
	require.True(t, errors.As(err, &nl), "Route: %v", err)
	_, err = l.Append(t.Context(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
	require.True(t, errors.As(err, &nl), "Append: %v", err)

	cluster.RestoreLease(l)
	res, err := l.Pull(t.Context(), &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1, "only the write made with the lease is stored")
}

// A leader whose Raft loop is stuck (here: writing a configuration entry
// to a log that does not return, as a paused process would be) cannot
// step down; cut off from the others, it still believes it leads while
// they elect another leader, which commits a write. The stuck node must
// not serve the read that would miss it: it holds no lease, since no
// follower answers it any more.
func TestNode_StuckLeaderCutOffServesNoStaleRead(t *testing.T) {
	c, hn := newHeldCluster(t, true)
	ctx := t.Context()
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("first")})
	// A consumer group with a committed offset, so that the group calls
	// below would have something to answer; joined again, and committed
	// again, with the engine of a later tenure when one cuts in.
	join := &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Clustering, Subscriptions: []equeue.Subscription{{Topic: "t"}}}
	var as equeue.Assignment
	c.onLeader(t, "join g and commit", func(e *equeue.Engine) (err error) {
		if as, err = e.JoinGroup(ctx, join); err != nil {
			return err
		}
		require.Len(t, as.Queues, 1)
		return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: as.Queues[0], Offset: 1}}})
	}, nil)
	c.waitConverged()
	old := c.waitLeader()

	held, oldNet := hn.log(old.ID()), hn.net(old.ID())
	changed := make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	// Let it go, also when the test fails: it learns of the new leader and
	// follows.
	release := func() {
		held.setHeld(false)
		hn.heal()
		cancel()
	}
	defer release()
	held.setHeld(true)
	go func() { changed <- old.AddVoter(cctx, "ghost", "127.0.0.1:1") }()
	// The configuration entry is stored before Raft goes on: the old
	// leader's loop now waits on the held log, and can step down no more.
	time.Sleep(100 * time.Millisecond)
	var others []string
	for _, n := range c.nodes {
		if n != old {
			others = append(others, n.RaftAddr())
			hn.net(n.ID()).set([]string{old.RaftAddr()})
		}
	}
	oldNet.set(others)

	var next *cluster.Node
	eventually(t, 30*time.Second, func() error {
		for _, n := range c.nodes {
			if n != old && n.Status().Serving {
				next = n
				return nil
			}
		}
		return errors.New("no new leader yet")
	})
	eventually(t, 30*time.Second, func() error {
		_, err := next.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("second")}}})
		return err
	})
	st := old.Status()
	require.Equal(t, "Leader", st.State, "the stuck node still believes it leads")
	require.True(t, st.Serving, "its engine is still open")
	require.False(t, st.LeaseHeld, "its status shows it holds no lease")
	res, err := old.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	var nl *cluster.NotLeaderError
	require.True(t, errors.As(err, &nl), "the stuck leader served a read that misses the new leader's write: %v, %d messages", err, len(res.Messages))
	// Nor anything else: routes, group state, committed offsets, writes.
	_, err = old.Route(ctx, "t")
	require.True(t, errors.As(err, &nl), "Route: %v", err)
	_, err = old.FetchOffsets(ctx, "g", "m", as.Queues)
	require.True(t, errors.As(err, &nl), "FetchOffsets: %v", err)
	_, err = old.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m"})
	require.True(t, errors.As(err, &nl), "Heartbeat: %v", err)
	_, err = old.JoinGroup(ctx, join)
	require.True(t, errors.As(err, &nl), "JoinGroup: %v", err)
	_, err = old.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("stale")}}})
	require.True(t, errors.As(err, &nl), "Append: %v", err)

	release()
	<-changed
	c.waitConverged()
}
