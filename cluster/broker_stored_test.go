package cluster_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The leader's pulls come with the records as stored, for the remote
// server to carry them as they are; a follower refuses, as for Pull.
func TestNode_PullStoredOnTheLeaderOnly(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.onLeader(t, "append to t", func(e *equeue.Engine) error {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
			{Topic: "t", Tag: "A", Body: []byte("one")}, {Topic: "t", ID: "mine", Body: []byte("two")}}})
		return err
	}, func(failed *equeue.Engine) bool { return c.queueEndsWith(t, failed, "t", 0, []byte("two")) })
	li := c.leaderIndex() // after the calls above, which elections may have cut into
	leader := c.nodes[li]
	req := &equeue.PullRequest{Topic: "t", Max: 10}
	want, err := leader.Pull(ctx, req)
	require.NoError(t, err)
	res, stored, err := leader.PullStored(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, want.NextOffset, res.NextOffset)
	assert.Equal(t, want.Status, res.Status)
	require.Equal(t, len(want.Messages), stored.Len())
	_, n, ok := stored.BatchSize(1 << 20)
	require.True(t, ok)
	msgs, err := equeue.DecodeStoredBatch(stored.AppendBatch(nil, n))
	require.NoError(t, err)
	assert.Equal(t, want.Messages, msgs)

	_, stored, err = c.nodes[(li+1)%3].PullStored(ctx, req)
	require.ErrorIs(t, err, equeue.ErrNotLeader)
	assert.Nil(t, stored)
}
