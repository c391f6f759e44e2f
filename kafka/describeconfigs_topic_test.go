package kafka_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// configsOf is a described resource's configs by name.
func configsOf(t *testing.T, rs kadm.ResourceConfigs, name string) map[string]kadm.Config {
	t.Helper()
	r, err := rs.On(name, nil)
	require.NoError(t, err)
	require.NoError(t, r.Err, name)
	got := map[string]kadm.Config{}
	for _, c := range r.Configs {
		got[c.Key] = c
	}
	return got
}

// TestDescribeConfigs_TopicLimitsTheEngineKnows: DescribeConfigs (kadm's
// DescribeTopicConfigs, kafka-configs --describe) gives a topic's
// max.message.bytes, the engine's message size limit that bounds every
// topic (the value CreateTopics takes at least), as a default, and the
// topic's own retention age as retention.ms (-1 for none), as a topic
// config; a topic that sets no age has no retention.ms (the engine's
// policy applies, which the listener does not know). A broker gives
// message.max.bytes. Before, none of them was listed, so tools showed
// nothing for them.
func TestDescribeConfigs_TopicLimitsTheEngineKnows(t *testing.T) {
	e := openEngine(t, &equeue.Options{MaxMessageSize: 64 << 10})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "plain", 1))
	require.NoError(t, e.CreateTopicWith(ctx, "aged", equeue.TopicOptions{Queues: 2, Limits: equeue.TopicLimits{RetentionAge: 90 * time.Minute}}))
	require.NoError(t, e.CreateTopicWith(ctx, "forever", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{RetentionAge: -1}}))
	addr := serve(t, e, nil)
	adm := kadmin(t, addr)
	limit := strconv.Itoa(e.MaxMessageSize())
	require.Equal(t, strconv.Itoa(64<<10), limit)

	rs, err := adm.DescribeTopicConfigs(ctx, "plain", "aged", "forever")
	require.NoError(t, err)
	for _, name := range []string{"plain", "aged", "forever"} {
		got := configsOf(t, rs, name)
		mmb, ok := got["max.message.bytes"]
		require.True(t, ok, "%s: max.message.bytes listed", name)
		assert.Equal(t, limit, mmb.MaybeValue(), name)
		assert.Equal(t, kmsg.ConfigSourceDefaultConfig, mmb.Source, name)
		policy := got["cleanup.policy"]
		assert.Equal(t, "delete", policy.MaybeValue(), name)
	}
	assert.NotContains(t, configsOf(t, rs, "plain"), "retention.ms", "no age of its own")
	aged := configsOf(t, rs, "aged")["retention.ms"]
	assert.Equal(t, strconv.Itoa(int((90 * time.Minute).Milliseconds())), aged.MaybeValue())
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, aged.Source)
	forever := configsOf(t, rs, "forever")["retention.ms"]
	assert.Equal(t, "-1", forever.MaybeValue())
	assert.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, forever.Source)

	// Asked for by name, it alone is answered.
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, "aged", []string{"max.message.bytes"}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, kclient(t, addr))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	require.Len(t, resp.Resources[0].Configs, 1)
	assert.Equal(t, "max.message.bytes", resp.Resources[0].Configs[0].Name)
	assert.Equal(t, limit, *resp.Resources[0].Configs[0].Value)

	brokers, err := adm.DescribeBrokerConfigs(ctx)
	require.NoError(t, err)
	require.Len(t, brokers, 1)
	mmb, ok := configsOf(t, brokers, brokers[0].Name)["message.max.bytes"]
	require.True(t, ok, "message.max.bytes listed")
	assert.Equal(t, limit, mmb.MaybeValue())
}
