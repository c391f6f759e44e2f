package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/kafka"
)

// The Kafka listener can serve a node.
var _ kafka.Broker = (*cluster.Node)(nil)

// Offsets a Kafka-protocol group commits on the leader are replicated: the
// next leader returns them, and a follower refuses with the leader's name.
// Keeping such a group in use (KeepGroup, the listener's while the group
// has members) and claiming its name (ClaimGroup) go to the leader's
// engine likewise.
func TestCluster_GroupOffsetsSurviveALeaderChange(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "orders", 2)
	want := map[equeue.QueueRef]int64{{Topic: "orders", Queue: 0}: 7, {Topic: "orders", Queue: 1}: 3}
	for q, n := range want { // committed offsets are within their queues
		for i := range n {
			c.sendBatch(t, q.Topic, q.Queue, [][]byte{fmt.Appendf(nil, "x%d", i)})
		}
	}
	c.commitOffsets(t, "kgroup", want)
	// The calls go to whichever node leads as they are made: one a node
	// refused (it stopped leading, or its lease lapsed) is made again.
	c.onServing(t, "read the offsets of kgroup", func(n *cluster.Node) error {
		got, err := n.GroupOffsets(ctx, "kgroup")
		if err == nil {
			assert.Equal(t, want, got)
		}
		return err
	})
	c.onServing(t, "keep kgroup", func(n *cluster.Node) error { return n.KeepGroup(ctx, "kgroup") })
	// Claiming its name (ClaimGroup, the listener's while the group has
	// members) keeps native joins out on the leader's engine.
	c.onServing(t, "claim kgroup", func(n *cluster.Node) error {
		before := n.Status().Term
		if err := n.ClaimGroup(ctx, "kgroup", time.Minute); err != nil {
			return err
		}
		_, err := n.JoinGroup(ctx, &equeue.JoinRequest{Group: "kgroup", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
		switch {
		case errors.Is(err, equeue.ErrGroupNameTaken):
			return n.ClaimGroup(ctx, "kgroup", 0)
		case err == nil && n.Status().Term != before:
			// Another tenure's engine, which the claim did not reach.
			_ = n.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "kgroup", Member: "m"})
			return fmt.Errorf("%w: the term moved on between the claim and the join", equeue.ErrNotLeader)
		case err == nil:
			return fmt.Errorf("a native member joined under a claimed name, want an error matching %v", equeue.ErrGroupNameTaken)
		}
		return err
	})
	c.onServing(t, "keep a group that does not exist", func(n *cluster.Node) error {
		switch err := n.KeepGroup(ctx, "no-such-group"); {
		case errors.Is(err, equeue.ErrGroupNotFound):
			return nil
		case err == nil:
			return fmt.Errorf("kept a group that does not exist, want an error matching %v", equeue.ErrGroupNotFound)
		default:
			return err // refused (made again), or not the error expected
		}
	})

	// A follower refuses. A node that answered was elected after it was
	// seen following (its term moved on): another follower is asked.
	eventually(t, 30*time.Second, func() error {
		follower := c.nodes[(c.leaderIndex()+1)%3]
		before := follower.Status()
		if before.State != "Follower" {
			return fmt.Errorf("%s is not a follower: %s", before.ID, before.State)
		}
		_, err := follower.GroupOffsets(ctx, "kgroup")
		kerr := follower.KeepGroup(ctx, "kgroup")
		if (err == nil || kerr == nil) && follower.Status().Term != before.Term {
			return fmt.Errorf("%s was elected while it was asked", before.ID)
		}
		assert.ErrorIs(t, err, equeue.ErrNotLeader)
		assert.ErrorIs(t, kerr, equeue.ErrNotLeader)
		return nil
	})

	c.stop(c.leaderIndex())
	eventually(t, 30*time.Second, func() error {
		l := c.waitLeader()
		got, err := l.GroupOffsets(ctx, "kgroup")
		if err != nil {
			return err
		}
		if !assert.ObjectsAreEqual(want, got) {
			t.Fatalf("the new leader has %v, want %v", got, want)
		}
		return nil
	})
}
