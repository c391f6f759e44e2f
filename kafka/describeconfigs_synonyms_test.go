package kafka_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// synonymsOf is a config's synonyms as name=value@source.
func synonymsOf(c kadm.Config) []string {
	var out []string
	for _, s := range c.Synonyms {
		out = append(out, s.Key+"="+ptrValue(s.Value)+"@"+s.Source.String())
	}
	return out
}

// TestDescribeConfigs_SynonymsAndRetentionBytes: DescribeConfigs, asked
// for synonyms (kadm asks for them, as kafka-configs --describe --all and
// Kafka UIs do), gives each config's, highest precedence first: a topic
// config set on the topic has itself (DYNAMIC_TOPIC_CONFIG) and, where
// the listener knows it, the broker default it overrides; a default has
// the broker config it comes from (DEFAULT_CONFIG). retention.bytes is
// given: -1 for a topic without a byte limit of its own, the topic's
// MaxBytes (which bounds all its partitions together) for one that
// deletes its oldest messages past it, and -1 for one that refuses
// sends past it (nothing is deleted by size). Every config is read-only:
// the listener serves no AlterConfigs. Before, no synonyms and no
// retention.bytes were given.
func TestDescribeConfigs_SynonymsAndRetentionBytes(t *testing.T) {
	e := openEngine(t, &equeue.Options{MaxMessageSize: 64 << 10})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "plain", 1))
	require.NoError(t, e.CreateTopicWith(ctx, "capped", equeue.TopicOptions{Queues: 3, Limits: equeue.TopicLimits{MaxBytes: 1 << 20, RetentionAge: -1}}))
	require.NoError(t, e.CreateTopicWith(ctx, "full", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxBytes: 1 << 20, Overflow: equeue.OverflowReject}}))
	addr := serve(t, e, nil)
	adm := kadmin(t, addr)
	limit := strconv.Itoa(64 << 10)

	rs, err := adm.DescribeTopicConfigs(ctx, "plain", "capped", "full")
	require.NoError(t, err)
	for _, name := range []string{"plain", "capped", "full"} {
		for key, c := range configsOf(t, rs, name) {
			require.NotEmpty(t, c.Synonyms, "%s %s: synonyms given", name, key)
			first := c.Synonyms[0]
			assert.Equal(t, c.Source, first.Source, "%s %s: the first synonym is the value's own", name, key)
			assert.Equal(t, c.Value, first.Value, "%s %s", name, key)
		}
	}
	plain := configsOf(t, rs, "plain")
	assert.Equal(t, "-1", ptrValue(plain["retention.bytes"].Value))
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, plain["retention.bytes"].Source)
	assert.Equal(t, []string{"log.retention.bytes=-1@DEFAULT_CONFIG"}, synonymsOf(plain["retention.bytes"]))
	assert.Equal(t, []string{"message.max.bytes=" + limit + "@DEFAULT_CONFIG"}, synonymsOf(plain["max.message.bytes"]))
	assert.Equal(t, []string{"log.cleanup.policy=delete@DEFAULT_CONFIG"}, synonymsOf(plain["cleanup.policy"]))

	capped := configsOf(t, rs, "capped")
	assert.Equal(t, strconv.Itoa(1<<20), ptrValue(capped["retention.bytes"].Value))
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, capped["retention.bytes"].Source)
	assert.Equal(t, []string{"retention.bytes=1048576@DYNAMIC_TOPIC_CONFIG", "log.retention.bytes=-1@DEFAULT_CONFIG"}, synonymsOf(capped["retention.bytes"]))
	assert.Equal(t, []string{"retention.ms=-1@DYNAMIC_TOPIC_CONFIG"}, synonymsOf(capped["retention.ms"]))

	full := configsOf(t, rs, "full")
	assert.Equal(t, "-1", ptrValue(full["retention.bytes"].Value), "a limit that refuses sends deletes nothing")

	// Not asked for, no synonyms are sent; every config, of a topic or
	// the broker, is read-only.
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = typ
		if typ == kmsg.ConfigResourceTypeTopic {
			r.ResourceName = "capped"
		}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, kclient(t, addr))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 2)
	for _, rr := range resp.Resources {
		require.NotEmpty(t, rr.Configs)
		for _, c := range rr.Configs {
			assert.Empty(t, c.ConfigSynonyms, c.Name)
			assert.True(t, c.ReadOnly, "%s: read-only", c.Name)
			assert.NotEqual(t, kmsg.ConfigTypeUnknown, c.ConfigType, "%s: its type is given", c.Name)
		}
	}

	brokers, err := adm.DescribeBrokerConfigs(ctx)
	require.NoError(t, err)
	require.Len(t, brokers, 1)
	for key, c := range configsOf(t, brokers, brokers[0].Name) {
		assert.Equal(t, []string{key + "=" + ptrValue(c.Value) + "@DEFAULT_CONFIG"}, synonymsOf(c), key)
	}
}

// ptrValue is *v, or "<nil>".
func ptrValue(v *string) string {
	if v == nil {
		return "<nil>"
	}
	return *v
}
