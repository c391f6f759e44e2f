package kafka

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// unservedConfig returns why a topic cannot be created with configs, ""
// when it can: a config whose value says what the listener does not do
// would have the client rely on it. The listener has no log compaction
// (cleanup.policy must be delete) and one timestamp type for every topic
// (Options.LogAppendTime), as DescribeConfigs reports them; it has no
// per-topic record size limit (the engine's MaxMessageSize bounds every
// topic alike, so it honours a max.message.bytes of at least that only:
// maxMessageBytesRefused) and one replica, which honours
// min.insync.replicas 1 only. Other configs (retention, segment sizes and
// the like, which the engine's topic options rule) are accepted and
// ignored, and so is a null value (the default).
func (c *conn) unservedConfig(configs []kmsg.CreateTopicsRequestTopicConfig) string {
	for _, cfg := range configs {
		if cfg.Value == nil {
			continue
		}
		v := *cfg.Value
		switch cfg.Name {
		case "cleanup.policy":
			for _, p := range strings.Split(v, ",") {
				if strings.TrimSpace(p) != "delete" {
					return fmt.Sprintf("cleanup.policy %q: no log compaction here, the policy is delete", v)
				}
			}
		case "max.message.bytes":
			if why := c.maxMessageBytesRefused(v); why != "" {
				return why
			}
		case "min.insync.replicas":
			if strings.TrimSpace(v) != "1" {
				return fmt.Sprintf("min.insync.replicas %q: one replica here, so only 1", v)
			}
		case "message.timestamp.type":
			if want := c.timestampType(); v != want {
				return fmt.Sprintf("message.timestamp.type %q: this listener's topics have %s", v, want)
			}
		}
	}
	return ""
}

// timestampType is the message.timestamp.type of the listener's topics.
func (c *conn) timestampType() string {
	if c.s.o.LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}
