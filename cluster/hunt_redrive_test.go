package cluster_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// TestHunt_RedriveCutByALeaderChangeIsNotCalledUndone redrives three dead
// letters, one write each, and hands the leadership over after the first
// was sent: the call must not answer as a refusal that did nothing
// (equeue.ErrNotLeader alone) while a dead letter went back. Sent again,
// it sends the others, each once.
func TestHunt_RedriveCutByALeaderChangeIsNotCalledUndone(t *testing.T) {
	var writes atomic.Int32
	held, opt := newHeldWrite(func(b *store.Batch) bool {
		return len(b.Entries) > 0 && writes.Add(1) == 2 // the second dead letter's copy
	})
	c := newCluster(t, 3, opt)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	li := c.leaderIndex()
	old := c.nodes[li]
	grant := joinedGroup(t, old)
	res, err := old.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10, Group: "g", Member: "m", Epoch: grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	for _, m := range res.Messages {
		_, err := old.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: m.Offset,
			Attempts: 1, Cause: "fails", DeadLetter: true})
		require.NoError(t, err)
	}

	held.armed.Store(true)
	type redriven struct {
		n   int
		err error
	}
	done := make(chan redriven, 1)
	go func() {
		n, err := old.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
		done <- redriven{n, err}
	}()
	held.handOverUnder(t, c, li)
	r := <-done
	t.Logf("Redrive: %d, %v", r.n, r.err)
	require.True(t, errors.Is(r.err, equeue.ErrIndeterminate) || errors.Is(r.err, equeue.ErrNotLeader),
		"a redrive cut by a leader change is refused or of unknown outcome: %v", r.err)

	var letters []equeue.DLQEntry
	c.onServing(t, "dead letters", func(n *cluster.Node) error {
		var err error
		letters, err = n.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
		return err
	})
	sent := 0
	for _, d := range letters {
		if d.Redriven {
			sent++
		}
	}
	if errors.Is(r.err, equeue.ErrNotLeader) && !errors.Is(r.err, equeue.ErrIndeterminate) {
		require.Zero(t, sent, "Redrive answered as a refusal that did nothing (%v), yet %d dead letters went back", r.err, sent)
	}
	// Sent again to the new leader, the redrive sends the rest, once.
	var again int
	c.onServing(t, "redrive again", func(n *cluster.Node) error {
		var err error
		again, err = n.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
		return err
	})
	require.Equal(t, 3-sent, again, "the dead letters not sent before")
}
