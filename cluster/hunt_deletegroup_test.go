package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// TestHunt_DeleteGroupCutByALeaderChangeIsNotCalledUndone deletes a
// group whose keys go in a first write and whose retry topic goes in a
// later one, and hands the leadership over between the two: the keys
// (its committed offsets) are gone, so the call must not answer as a
// refusal that did nothing (equeue.ErrNotLeader alone), which a caller
// takes for "the group is as it was".
func TestHunt_DeleteGroupCutByALeaderChangeIsNotCalledUndone(t *testing.T) {
	retryKey := append([]byte("topic/"), equeue.RetryTopic("g")...)
	held, opt := newHeldWrite(func(b *store.Batch) bool {
		for _, op := range b.Meta {
			if op.Delete && bytes.Equal(op.Key, retryKey) {
				return true
			}
		}
		return false
	})
	c := newCluster(t, 3, opt)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.sendBatch(t, "t", 0, [][]byte{[]byte("a"), []byte("b"), []byte("c")})
	li := c.leaderIndex()
	old := c.nodes[li]
	grant := joinedGroup(t, old)
	require.NoError(t, old.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: 2}}}))
	require.NoError(t, old.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))

	held.armed.Store(true)
	deleted := make(chan error, 1)
	go func() { deleted <- old.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}) }()
	held.handOverUnder(t, c, li)
	err := <-deleted
	t.Logf("DeleteGroup: %v", err)
	require.True(t, errors.Is(err, equeue.ErrIndeterminate) || errors.Is(err, equeue.ErrNotLeader),
		"a delete cut by a leader change is refused or of unknown outcome: %v", err)

	var offs map[equeue.QueueRef]int64
	c.onServing(t, "offsets", func(n *cluster.Node) error {
		var err error
		offs, err = n.GroupOffsets(ctx, "g")
		return err
	})
	if errors.Is(err, equeue.ErrNotLeader) && !errors.Is(err, equeue.ErrIndeterminate) {
		require.Equal(t, int64(2), offs[equeue.QueueRef{Topic: "t"}],
			"DeleteGroup answered as a refusal that did nothing (%v), yet the group's offsets are gone", err)
	}
	// Sent again to the new leader, the delete finishes.
	c.onServing(t, "delete again", func(n *cluster.Node) error {
		err := n.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
		if errors.Is(err, equeue.ErrGroupNotFound) {
			return nil
		}
		return err
	})
}
