package kafka

// defaultQueueser is a Broker that tells the queue count of a topic
// created without one (equeue.Engine.DefaultQueues).
type defaultQueueser interface {
	DefaultQueues() int
}

// partitionsOf is the partition count a CreateTopics asking for n makes:
// n, or for -1 (the default) the Broker's default queue count, -1 when
// the Broker does not tell it. A validate_only create answers it, as
// the create would.
func (c *conn) partitionsOf(n int32) int32 {
	if n >= 0 {
		return n
	}
	if d, ok := c.s.b.(defaultQueueser); ok {
		return int32(d.DefaultQueues())
	}
	return -1
}
