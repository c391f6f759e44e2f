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
	"github.com/equeue-go/equeue/kafka"
)

// The Kafka listener can serve a node.
var _ kafka.Broker = (*cluster.Node)(nil)

// Offsets a Kafka-protocol group commits on the leader are replicated: the
// next leader returns them, and a follower refuses with the leader's name.
// Keeping such a group in use (KeepGroup, the listener's while the group
// has members) goes to the leader's engine likewise.
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
	leader := c.waitLeader()
	got, err := leader.GroupOffsets(ctx, "kgroup")
	require.NoError(t, err)
	assert.Equal(t, want, got)

	require.NoError(t, leader.KeepGroup(ctx, "kgroup"))
	assert.ErrorIs(t, leader.KeepGroup(ctx, "no-such-group"), equeue.ErrGroupNotFound)

	follower := c.nodes[(c.leaderIndex()+1)%3]
	_, err = follower.GroupOffsets(ctx, "kgroup")
	assert.ErrorIs(t, err, equeue.ErrNotLeader)
	assert.ErrorIs(t, follower.KeepGroup(ctx, "kgroup"), equeue.ErrNotLeader)

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
