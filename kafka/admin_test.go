package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/equeue-go/equeue"
)

// TestAdmin_TopicsAndPartitions creates, grows and deletes topics through
// kadm; the engine sees each change.
func TestAdmin_TopicsAndPartitions(t *testing.T) {
	e, addr := setup(t, nil)
	ctx := testCtx(t)
	adm := kadmin(t, addr)

	created, err := adm.CreateTopics(ctx, 3, 1, nil, "a", "b")
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		require.NoError(t, created[name].Err, name)
		ti, err := e.Topic(ctx, name)
		require.NoError(t, err)
		assert.Len(t, ti.Queues, 3)
	}
	again, err := adm.CreateTopics(ctx, 3, 1, nil, "a")
	require.NoError(t, err)
	assert.ErrorIs(t, again["a"].Err, kerr.TopicAlreadyExists)
	bad, err := adm.CreateTopics(ctx, 1, 3, nil, "c")
	require.NoError(t, err)
	assert.ErrorIs(t, bad["c"].Err, kerr.InvalidReplicationFactor)
	badName, err := adm.CreateTopics(ctx, 1, 1, nil, "no/slash")
	require.NoError(t, err)
	assert.ErrorIs(t, badName["no/slash"].Err, kerr.InvalidTopicException)

	grown, err := adm.UpdatePartitions(ctx, 5, "a")
	require.NoError(t, err)
	require.NoError(t, grown["a"].Err)
	ti, err := e.Topic(ctx, "a")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 5)
	shrink, err := adm.UpdatePartitions(ctx, 2, "a")
	require.NoError(t, err)
	assert.ErrorIs(t, shrink["a"].Err, kerr.InvalidPartitions)

	details, err := adm.ListTopics(ctx)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"a", "b"}, details.Names())
	assert.Len(t, details["a"].Partitions, 5)

	deleted, err := adm.DeleteTopics(ctx, "b")
	require.NoError(t, err)
	require.NoError(t, deleted["b"].Err)
	_, err = e.Topic(ctx, "b")
	assert.Error(t, err)
	missing, err := adm.DeleteTopics(ctx, "b")
	require.NoError(t, err)
	assert.ErrorIs(t, missing["b"].Err, kerr.UnknownTopicOrPartition)

	cfg, err := adm.DescribeTopicConfigs(ctx, "a")
	require.NoError(t, err)
	require.Len(t, cfg, 1)
	require.NoError(t, cfg[0].Err)
	v, err := cfg.On("a", nil)
	require.NoError(t, err)
	assert.NotEmpty(t, v.Configs)
}

// TestAdmin_InternalTopicsHidden: the engine's retry and dead-letter topics
// never show to Kafka clients.
func TestAdmin_InternalTopicsHidden(t *testing.T) {
	e, addr := setup(t, map[string]int{"jobs": 1})
	ctx := testCtx(t)
	// A native consumer group's join creates its retry topic.
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "jobs"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	all, err := e.Topics(ctx)
	require.NoError(t, err)
	require.Greater(t, len(all), 1, "the engine has an internal topic")
	details, err := kadmin(t, addr).ListTopics(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"jobs"}, details.Names())
}
