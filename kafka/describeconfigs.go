package kafka

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// describedConfig is one config a DescribeConfigs answer gives: its name,
// value, type and where the value comes from, and its synonyms (given
// when the request asks for them), highest precedence first: the config
// itself, then the broker config it falls back to, as Kafka lists them.
type describedConfig struct {
	name, value string
	typ         kmsg.ConfigType
	source      kmsg.ConfigSource
	synonyms    []configSynonym
}

// configSynonym is a synonym of a describedConfig.
type configSynonym struct {
	name, value string
	source      kmsg.ConfigSource
}

// topicDefault is a topic config that has the broker's default value, the
// broker config broker's (as Kafka names them: log.cleanup.policy for
// cleanup.policy).
func topicDefault(name, broker, value string, typ kmsg.ConfigType) describedConfig {
	return describedConfig{name: name, value: value, typ: typ, source: kmsg.ConfigSourceDefaultConfig,
		synonyms: []configSynonym{{broker, value, kmsg.ConfigSourceDefaultConfig}}}
}

// topicOwn is a topic config the topic sets itself, over the broker
// default def of the broker config broker (none when def is nil: the
// listener does not know it).
func topicOwn(name, value string, typ kmsg.ConfigType, broker string, def *string) describedConfig {
	dc := describedConfig{name: name, value: value, typ: typ, source: kmsg.ConfigSourceDynamicTopicConfig,
		synonyms: []configSynonym{{name, value, kmsg.ConfigSourceDynamicTopicConfig}}}
	if def != nil {
		dc.synonyms = append(dc.synonyms, configSynonym{broker, *def, kmsg.ConfigSourceDefaultConfig})
	}
	return dc
}

// brokerDefault is a broker config at its default value.
func brokerDefault(name, value string, typ kmsg.ConfigType) describedConfig {
	return describedConfig{name: name, value: value, typ: typ, source: kmsg.ConfigSourceDefaultConfig,
		synonyms: []configSynonym{{name, value, kmsg.ConfigSourceDefaultConfig}}}
}

// topicConfigs are the configs DescribeConfigs gives topic ti: those
// every topic has here (no compaction, the listener's timestamp type,
// the producer's compression), max.message.bytes when the Broker tells
// the engine's message size limit, which bounds every topic (as Kafka
// gives a topic the broker's default), retention.ms when the topic
// has an age limit of its own (-1 for none, an age below a millisecond rounded up to one, not 0, which deletes at once; a topic without one follows
// the engine's retention policy, which a Broker does not tell), and
// retention.bytes (retentionBytes).
func (c *conn) topicConfigs(ti equeue.TopicInfo) []describedConfig {
	configs := []describedConfig{
		topicDefault("cleanup.policy", "log.cleanup.policy", "delete", kmsg.ConfigTypeList),
		c.timestampConfig("message.timestamp.type"),
		topicDefault("compression.type", "compression.type", "producer", kmsg.ConfigTypeString),
	}
	if s, ok := c.s.b.(maxMessageSizer); ok {
		configs = append(configs, topicDefault("max.message.bytes", "message.max.bytes", strconv.Itoa(s.MaxMessageSize()), kmsg.ConfigTypeInt))
	}
	switch age := ti.Limits.RetentionAge; {
	case age < 0:
		configs = append(configs, topicOwn("retention.ms", "-1", kmsg.ConfigTypeLong, "log.retention.ms", nil))
	case age > 0:
		ms := strconv.FormatInt(int64((age+time.Millisecond-1)/time.Millisecond), 10)
		configs = append(configs, topicOwn("retention.ms", ms, kmsg.ConfigTypeLong, "log.retention.ms", nil))
	}
	return append(configs, retentionBytes(ti.Limits))
}

// retentionBytes is a topic's retention.bytes: its MaxBytes when it
// deletes its oldest messages past it (OverflowDropOldest), a bound on
// all the topic's partitions together where Kafka's bounds each
// partition; else -1, Kafka's "no limit", as a default: the topic sets
// no byte limit, or one past which sends are refused and nothing is
// deleted (OverflowReject). The engine's store-wide limit
// (equeue.RetentionPolicy.MaxBytes), which a Broker does not tell, is
// not given.
func retentionBytes(l equeue.TopicLimits) describedConfig {
	none := "-1"
	if l.MaxBytes > 0 && l.Overflow == equeue.OverflowDropOldest {
		return topicOwn("retention.bytes", strconv.FormatInt(l.MaxBytes, 10), kmsg.ConfigTypeLong, "log.retention.bytes", &none)
	}
	return topicDefault("retention.bytes", "log.retention.bytes", none, kmsg.ConfigTypeLong)
}

// brokerConfigs are the configs DescribeConfigs gives this broker, whose
// ID is self: one replica, its topics' timestamp type, and message.max.bytes when the Broker tells the
// engine's message size limit.
func (c *conn) brokerConfigs(self string) []describedConfig {
	configs := []describedConfig{
		brokerDefault("broker.id", self, kmsg.ConfigTypeInt),
		brokerDefault("default.replication.factor", "1", kmsg.ConfigTypeInt),
		brokerDefault("min.insync.replicas", "1", kmsg.ConfigTypeInt),
		c.timestampConfig("log.message.timestamp.type"),
	}
	if s, ok := c.s.b.(maxMessageSizer); ok {
		configs = append(configs, brokerDefault("message.max.bytes", strconv.Itoa(s.MaxMessageSize()), kmsg.ConfigTypeInt))
	}
	return configs
}

// timestampConfig is the config name (a topic's message.timestamp.type,
// or the broker's log.message.timestamp.type) of the listener's
// timestamp type. Options.LogAppendTime is set where the listener
// starts, as a Kafka broker's server.properties sets
// log.message.timestamp.type: then STATIC_BROKER_CONFIG, over Kafka's
// default, CreateTime; without it, that default.
func (c *conn) timestampConfig(name string) describedConfig {
	const broker, def = "log.message.timestamp.type", "CreateTime"
	if !c.s.o.LogAppendTime {
		return describedConfig{name: name, value: def, typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceDefaultConfig,
			synonyms: []configSynonym{{broker, def, kmsg.ConfigSourceDefaultConfig}}}
	}
	v := c.timestampType()
	return describedConfig{name: name, value: v, typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceStaticBrokerConfig,
		synonyms: []configSynonym{{broker, v, kmsg.ConfigSourceStaticBrokerConfig}, {broker, def, kmsg.ConfigSourceDefaultConfig}}}
}
