package kafka

import (
	"fmt"
	"strconv"
	"strings"
)

// maxMessageSizer is a Broker that tells the most bytes one message may
// take (equeue.Engine.MaxMessageSize).
type maxMessageSizer interface {
	MaxMessageSize() int
}

// maxMessageBytesRefused says why a CreateTopics config max.message.bytes
// of value v cannot be honoured, "" when it can. The engine has no
// per-topic message size limit: its own bounds every topic, and refuses a
// larger message whatever the topic says, so a value of at least that
// limit is honoured (and not kept: the engine's limit is the topic's),
// while a smaller one, which nothing would enforce, is not; neither is
// any value when the Broker does not tell its limit.
func (c *conn) maxMessageBytesRefused(v string) string {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return fmt.Sprintf("max.message.bytes %q: not a size in bytes (0 to %d)", v, int32(^uint32(0)>>1))
	}
	s, ok := c.s.b.(maxMessageSizer)
	if !ok {
		return fmt.Sprintf("max.message.bytes %q: no per-topic record size limit here, and this broker does not tell the one that bounds every topic", v)
	}
	if limit := s.MaxMessageSize(); n < int64(limit) {
		return fmt.Sprintf("max.message.bytes %q: no per-topic record size limit here; the engine's, %d bytes, bounds every topic, so only a value of at least that is honoured", v, limit)
	}
	return ""
}
