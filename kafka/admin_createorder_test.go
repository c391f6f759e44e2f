package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// createOne sends a CreateTopics for topic with partitions and configs
// (name, value pairs) and returns the topic's answer.
func createOne(t *testing.T, r requester, topic string, partitions int32, validateOnly bool, kv ...string) kmsg.CreateTopicsResponseTopic {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = validateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, -1
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := r.Request(testCtx(t), req)
	require.NoError(t, err)
	topics := resp.(*kmsg.CreateTopicsResponse).Topics
	require.Len(t, topics, 1)
	return topics[0]
}

// TestAdmin_CreateTopicRefusesLimitsItDoesNotHonour: max.message.bytes (the
// engine's MaxMessageSize rules every topic alike) and a min.insync.replicas
// other than 1 (one replica) were accepted and ignored, so a client relied
// on a limit that was not there. They are refused INVALID_CONFIG naming the
// key, validate_only too, and nothing is made; min.insync.replicas=1, which
// one replica honours, is accepted.
func TestAdmin_CreateTopicRefusesLimitsItDoesNotHonour(t *testing.T) {
	e, addr := setup(t, nil)
	cl := kclient(t, addr)
	for _, kv := range [][]string{{"max.message.bytes", "1024"}, {"min.insync.replicas", "2"}} {
		for _, validateOnly := range []bool{true, false} {
			r := createOne(t, cl, "limited", 1, validateOnly, kv...)
			assert.ErrorIs(t, kerr.ErrorForCode(r.ErrorCode), kerr.InvalidConfig, "%s (validate only: %v)", kv[0], validateOnly)
			if assert.NotNil(t, r.ErrorMessage, kv[0]) {
				assert.Contains(t, *r.ErrorMessage, kv[0], "the message names the config")
			}
			_, err := e.Topic(testCtx(t), "limited")
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s made nothing", kv[0])
		}
	}
	require.Equal(t, int16(0), createOne(t, cl, "one-replica", 1, false, "min.insync.replicas", "1").ErrorCode)
}

// TestAdmin_CreateExistingTopicIsAlreadyExistsFirst: as Kafka's controller
// does (existing topics are marked TOPIC_ALREADY_EXISTS before their
// configs and partition counts are looked at), a create of a topic that
// exists is answered TOPIC_ALREADY_EXISTS whatever else is wrong with it;
// before, a config the listener cannot honour was answered INVALID_CONFIG,
// and a bad partition count INVALID_PARTITIONS, which told the client the
// topic could be made with other settings.
func TestAdmin_CreateExistingTopicIsAlreadyExistsFirst(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 2})
	cl := kclient(t, addr)
	for _, validateOnly := range []bool{true, false} {
		assert.ErrorIs(t, kerr.ErrorForCode(createOne(t, cl, "t", 1, validateOnly, "cleanup.policy", "compact").ErrorCode), kerr.TopicAlreadyExists, "bad config, validate only: %v", validateOnly)
		assert.ErrorIs(t, kerr.ErrorForCode(createOne(t, cl, "t", 0, validateOnly).ErrorCode), kerr.TopicAlreadyExists, "bad partitions, validate only: %v", validateOnly)
	}
}

// TestAdmin_CreateTopicValidateOnlyDefaultPartitions: a validate_only create
// with the default partition count (-1) is accepted and answered as the
// real create is, with the partition count the topic would get (the
// engine's Options.DefaultQueues), not -1.
func TestAdmin_CreateTopicValidateOnlyDefaultPartitions(t *testing.T) {
	e := openEngine(t, &equeue.Options{DefaultQueues: 3})
	cl := kclient(t, serve(t, e, nil))
	validated := createOne(t, cl, "d", -1, true)
	require.Equal(t, int16(0), validated.ErrorCode)
	_, err := e.Topic(testCtx(t), "d")
	require.ErrorIs(t, err, equeue.ErrTopicNotFound, "validate_only makes nothing")
	created := createOne(t, cl, "d", -1, false)
	require.Equal(t, int16(0), created.ErrorCode)
	assert.Equal(t, int32(3), created.NumPartitions)
	assert.Equal(t, created.NumPartitions, validated.NumPartitions, "validate_only answers as the create")
	assert.Equal(t, created.ReplicationFactor, validated.ReplicationFactor)

	// An engine opened without a default: the package's.
	plain := createOne(t, kclient(t, serve(t, openEngine(t, nil), nil)), "d", -1, true)
	require.Equal(t, int16(0), plain.ErrorCode)
	assert.Equal(t, int32(equeue.DefaultQueues), plain.NumPartitions)
}
