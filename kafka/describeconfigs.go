package kafka

import (
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// describedConfig is one config a DescribeConfigs answer gives: its name,
// value and where the value comes from.
type describedConfig struct {
	name, value string
	source      kmsg.ConfigSource
}

// topicConfigs are the configs DescribeConfigs gives topic ti: those
// every topic has here (no compaction, the listener's timestamp type,
// the producer's compression), max.message.bytes when the Broker tells
// the engine's message size limit, which bounds every topic (as Kafka
// gives a topic the broker's default), and retention.ms when the topic
// has an age limit of its own (-1 for none, an age below a millisecond rounded up to one, not 0, which deletes at once; a topic without one follows
// the engine's retention policy, which a Broker does not tell).
// retention.bytes is not given: a topic's MaxBytes bounds all its
// partitions together, where Kafka's bounds each partition.
func (c *conn) topicConfigs(ti equeue.TopicInfo) []describedConfig {
	configs := []describedConfig{
		{"cleanup.policy", "delete", kmsg.ConfigSourceDefaultConfig},
		{"message.timestamp.type", c.timestampType(), kmsg.ConfigSourceDefaultConfig},
		{"compression.type", "producer", kmsg.ConfigSourceDefaultConfig},
	}
	if s, ok := c.s.b.(maxMessageSizer); ok {
		configs = append(configs, describedConfig{"max.message.bytes", strconv.Itoa(s.MaxMessageSize()), kmsg.ConfigSourceDefaultConfig})
	}
	switch age := ti.Limits.RetentionAge; {
	case age < 0:
		configs = append(configs, describedConfig{"retention.ms", "-1", kmsg.ConfigSourceDynamicTopicConfig})
	case age > 0:
		configs = append(configs, describedConfig{"retention.ms", strconv.FormatInt(int64((age+time.Millisecond-1)/time.Millisecond), 10), kmsg.ConfigSourceDynamicTopicConfig})
	}
	return configs
}

// brokerConfigs are the configs DescribeConfigs gives this broker, whose
// ID is self: one replica, and message.max.bytes when the Broker tells the
// engine's message size limit.
func (c *conn) brokerConfigs(self string) []describedConfig {
	configs := []describedConfig{
		{"broker.id", self, kmsg.ConfigSourceDefaultConfig},
		{"default.replication.factor", "1", kmsg.ConfigSourceDefaultConfig},
		{"min.insync.replicas", "1", kmsg.ConfigSourceDefaultConfig},
	}
	if s, ok := c.s.b.(maxMessageSizer); ok {
		configs = append(configs, describedConfig{"message.max.bytes", strconv.Itoa(s.MaxMessageSize()), kmsg.ConfigSourceDefaultConfig})
	}
	return configs
}
