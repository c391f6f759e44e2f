package cluster_test

import (
	"context"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// TestNode_MaxMessageSizeIsTheEngines: a node tells the message size
// limit of its engine's options, the default without them, so a Kafka
// listener over it takes a CreateTopics max.message.bytes of at least
// that, as over a lone engine.
func TestNode_MaxMessageSizeIsTheEngines(t *testing.T) {
	for _, tc := range []struct {
		opts *equeue.Options
		want int
	}{
		{&equeue.Options{MaxMessageSize: 1 << 20}, 1 << 20},
		{nil, equeue.DefaultMaxMessageSize},
	} {
		c := newCluster(t, 1, func(o *cluster.Options) { o.Engine = tc.opts })
		s, ok := any(c.nodes[0]).(interface{ MaxMessageSize() int })
		require.True(t, ok, "a Node tells its message size limit")
		assert.Equal(t, tc.want, s.MaxMessageSize())
	}
}

// TestNode_MaxMessageSizeIsTheLeadersEngines: the store's largest value
// bounds a message too (a Badger value log of 1 MiB holds less than the
// 4 MiB default), and the leader's engine refuses a message above it: the
// node tells that limit, the one its appends check, not its options'
// larger one, so a Kafka listener over it neither refuses a
// max.message.bytes the engine honours nor names a limit it does not
// have. A follower tells the limit its engine would have, leading.
func TestNode_MaxMessageSizeIsTheLeadersEngines(t *testing.T) {
	bo := store.DefaultBadgerOptions()
	bo.ValueLogFileSize = 1 << 20
	c := newCluster(t, 2, func(o *cluster.Options) { o.Badger = &bo })
	n := c.waitLeader()
	e, err := n.Engine()
	require.NoError(t, err)
	limit := e.MaxMessageSize()
	require.Less(t, limit, equeue.DefaultMaxMessageSize, "the store bounds the engine's limit")
	for i, node := range c.nodes {
		assert.Equal(t, limit, node.MaxMessageSize(), "node %d (leads: %v)", i, node == n)
	}

	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
	_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, n.MaxMessageSize())}}})
	assert.ErrorIs(t, err, equeue.ErrMessageTooLarge, "a body of the limit alone is over it, encoded")
}
