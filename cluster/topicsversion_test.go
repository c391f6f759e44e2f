package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// A Kafka listener on a node keeps its index of topic IDs by the node's
// TopicsVersion (package kafka).
var _ interface{ TopicsVersion() uint64 } = (*cluster.Node)(nil)

// The leader's TopicsVersion changes when a topic is created or deleted
// through it, and stays while only messages change.
func TestCluster_TopicsVersionFollowsTheLeadersTopics(t *testing.T) {
	c := newCluster(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := c.waitLeader()
	eventually(t, 20*time.Second, func() error { return l.CreateTopic(ctx, "t", 1) })
	created := l.TopicsVersion()
	_, err := l.Topics(ctx)
	require.NoError(t, err)
	assert.Equal(t, created, l.TopicsVersion(), "a listing changes nothing")
	require.NoError(t, l.CreateTopic(ctx, "u", 1))
	assert.NotEqual(t, created, l.TopicsVersion(), "a topic created")
	again := l.TopicsVersion()
	require.NoError(t, l.DeleteTopic(ctx, "u"))
	assert.NotEqual(t, again, l.TopicsVersion(), "a topic deleted")
}
