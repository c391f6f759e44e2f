package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestAdmin_CreateTopicRefusesConfigsItCannotHonour: a topic asked for
// with log compaction (cleanup.policy=compact, as Kafka Streams makes its
// changelogs and Kafka Connect its offset topics), or with a timestamp
// type other than the listener's, was created without it, answered as
// if it had it: the client then relied on what it did not have (a
// compacted topic under retention loses the last value of its keys).
// Such a create is refused INVALID_CONFIG, validate_only too, and makes
// nothing; configs the listener does honour, or has no use for
// (retention.ms and the like are the engine's topic options), and null
// values (the default) are accepted.
func TestAdmin_CreateTopicRefusesConfigsItCannotHonour(t *testing.T) {
	e := openEngine(t, nil)
	addr := serve(t, e, &kafka.Options{LogAppendTime: true})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	create := func(name string, validateOnly bool, kv ...*string) kmsg.CreateTopicsResponseTopic {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validateOnly
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = *kv[i], kv[i+1]
			rt.Configs = append(rt.Configs, c)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1)
		return resp.Topics[0]
	}
	s := kmsg.StringPtr
	for _, tc := range []struct {
		name string
		kv   []*string
	}{
		{"compact", []*string{s("cleanup.policy"), s("compact")}},
		{"compact-delete", []*string{s("retention.ms"), s("1000"), s("cleanup.policy"), s("compact,delete")}},
		{"create-time", []*string{s("message.timestamp.type"), s("CreateTime")}},
	} {
		for _, validateOnly := range []bool{true, false} {
			r := create(tc.name, validateOnly, tc.kv...)
			assert.ErrorIs(t, kerr.ErrorForCode(r.ErrorCode), kerr.InvalidConfig, "%s (validate only: %v)", tc.name, validateOnly)
			if assert.NotNil(t, r.ErrorMessage, tc.name) {
				assert.Contains(t, *r.ErrorMessage, *tc.kv[len(tc.kv)-2], "the message names the config")
			}
			_, err := e.Topic(ctx, tc.name)
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s made nothing", tc.name)
		}
	}
	for _, tc := range []struct {
		name string
		kv   []*string
	}{
		{"delete", []*string{s("cleanup.policy"), s("delete"), s("retention.ms"), s("60000")}},
		{"log-append-time", []*string{s("message.timestamp.type"), s("LogAppendTime")}},
		{"defaults", []*string{s("cleanup.policy"), nil, s("message.timestamp.type"), nil}},
	} {
		r := create(tc.name, false, tc.kv...)
		require.Equal(t, int16(0), r.ErrorCode, tc.name)
		_, err := e.Topic(ctx, tc.name)
		assert.NoError(t, err, tc.name)
	}
}
