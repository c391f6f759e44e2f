package kafka

import (
	"context"
	"time"
)

// sweepProducers forgets the producers' sequence states idle since before
// now-producerIdle, and those of topics deleted outside the listener
// (Engine.DeleteTopic, the CLI), or deleted and made again under their
// name: a state names the ID of the topic it was learned on. When the
// topics cannot be listed, only the idle ones go. What rebuild read of
// partitions that is never used again goes too (producers.expireScans).
func (c *coordinator) sweepProducers(ctx context.Context, now time.Time) {
	listed := time.Now()
	if topics, err := c.s.b.Topics(ctx); err == nil {
		live := make(map[string]uint32, len(topics))
		for _, ti := range topics {
			live[ti.Name] = ti.ID
		}
		c.s.pids.forgetDeleted(live, listed)
	}
	c.s.pids.expire(now, producerIdle)
	c.s.pids.expireScans(now, producerIdle, c.s.term())
}
