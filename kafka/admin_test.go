package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// createPartitions asks for topic to have count partitions and returns the
// answer's error code.
func createPartitions(t *testing.T, cl *kgo.Client, topic string, count int32, validateOnly bool) int16 {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, count
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(testCtx(t), cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	return resp.Topics[0].ErrorCode
}

// TestAdmin_CreatePartitionsValidateOnlyAnswersAsTheChange: a
// CreatePartitions with validate_only gets the answer the change would
// get, INVALID_PARTITIONS past the 256 partitions a topic may have too,
// and changes nothing.
func TestAdmin_CreatePartitionsValidateOnlyAnswersAsTheChange(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	cl := kclient(t, addr)
	for _, count := range []int32{equeue.MaxQueuesPerTopic + 1, 1 << 30, 1, 3} {
		validated := createPartitions(t, cl, "t", count, true)
		ti, err := e.Topic(testCtx(t), "t")
		require.NoError(t, err)
		require.Len(t, ti.Queues, 2, "validate_only changes nothing")
		assert.Equal(t, createPartitions(t, cl, "t", count, false), validated, "count %d", count)
	}
	ti, err := e.Topic(testCtx(t), "t")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 3)
}

// TestAdmin_CreatePartitionsOfATopicWithPriorities: a topic with priority
// lanes has a partition per lane, and grows by whole queues: a count that
// is not a whole number of queues is refused with INVALID_PARTITIONS, and
// one that is gives the topic that many partitions, not more.
func TestAdmin_CreatePartitionsOfATopicWithPriorities(t *testing.T) {
	e, addr := setup(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 2}))
	cl := kclient(t, addr)
	for _, validateOnly := range []bool{true, false} {
		assert.Equal(t, kerr.InvalidPartitions.Code, createPartitions(t, cl, "p", 5, validateOnly), "validate_only %v", validateOnly)
	}
	ti, err := e.Topic(ctx, "p")
	require.NoError(t, err)
	require.Len(t, ti.Queues, 4, "refused: unchanged")
	require.Equal(t, int16(0), createPartitions(t, cl, "p", 6, false))
	ti, err = e.Topic(ctx, "p")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 6)
}
