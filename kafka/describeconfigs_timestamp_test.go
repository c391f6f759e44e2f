package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue/kafka"
)

// describeAll asks DescribeConfigs for every config of topic and of the
// broker, with or without their documentation, and returns the answer.
func describeAll(t *testing.T, addr, topic string, docs bool) *kmsg.DescribeConfigsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, docs
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = typ
		if typ == kmsg.ConfigResourceTypeTopic {
			r.ResourceName = topic
		}
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(testCtx(t), kclient(t, addr))
	require.NoError(t, err)
	require.Len(t, resp.Resources, 2)
	for _, rr := range resp.Resources {
		require.Equal(t, int16(0), rr.ErrorCode, rr.ResourceName)
		require.NotEmpty(t, rr.Configs, rr.ResourceName)
	}
	return resp
}

// configNamed returns the config name of rr, failing when there is none.
func configNamed(t *testing.T, rr kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range rr.Configs {
		if c.Name == name {
			return c
		}
	}
	require.Failf(t, "config not given", "%s %s", rr.ResourceName, name)
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

// synonymsOfRaw is a raw config's synonyms as name=value@source.
func synonymsOfRaw(c kmsg.DescribeConfigsResponseResourceConfig) []string {
	var out []string
	for _, s := range c.ConfigSynonyms {
		out = append(out, s.Name+"="+ptrValue(s.Value)+"@"+s.Source.String())
	}
	return out
}

// TestDescribeConfigs_LogAppendTimeIsAStaticBrokerConfig: a listener
// with Options.LogAppendTime has it for every topic, as a Kafka broker
// whose server.properties sets log.message.timestamp.type: a topic's
// message.timestamp.type is LogAppendTime from STATIC_BROKER_CONFIG,
// not a default, its synonyms the broker config as set, then Kafka's
// default (CreateTime); the broker gives log.message.timestamp.type so
// too. Without the option both are CreateTime defaults. Before, the
// LogAppendTime of the option was reported as DEFAULT_CONFIG, with a
// DEFAULT_CONFIG synonym of that value, and the broker did not give it.
func TestDescribeConfigs_LogAppendTimeIsAStaticBrokerConfig(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(testCtx(t), "t", 1))

	resp := describeAll(t, serve(t, e, &kafka.Options{LogAppendTime: true}), "t", false)
	topic := configNamed(t, resp.Resources[0], "message.timestamp.type")
	assert.Equal(t, "LogAppendTime", ptrValue(topic.Value))
	assert.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, topic.Source)
	assert.False(t, topic.IsDefault)
	assert.Equal(t, []string{
		"log.message.timestamp.type=LogAppendTime@STATIC_BROKER_CONFIG",
		"log.message.timestamp.type=CreateTime@DEFAULT_CONFIG",
	}, synonymsOfRaw(topic))
	broker := configNamed(t, resp.Resources[1], "log.message.timestamp.type")
	assert.Equal(t, "LogAppendTime", ptrValue(broker.Value))
	assert.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, broker.Source)
	assert.Equal(t, synonymsOfRaw(topic), synonymsOfRaw(broker))

	resp = describeAll(t, serve(t, e, nil), "t", false)
	topic = configNamed(t, resp.Resources[0], "message.timestamp.type")
	assert.Equal(t, "CreateTime", ptrValue(topic.Value))
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, topic.Source)
	assert.Equal(t, []string{"log.message.timestamp.type=CreateTime@DEFAULT_CONFIG"}, synonymsOfRaw(topic))
	broker = configNamed(t, resp.Resources[1], "log.message.timestamp.type")
	assert.Equal(t, "CreateTime", ptrValue(broker.Value))
	assert.Equal(t, kmsg.ConfigSourceDefaultConfig, broker.Source)
}
