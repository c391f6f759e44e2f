package kafka

import (
	"fmt"
	"sync"

	"github.com/equeue-go/equeue"
)

// topicIDCache remembers the IDs (equeue.TopicInfo.ID) of the topics an
// idempotent producer's batches named, by name, while the broker's
// TopicsVersion stays what it was when they were read: no topic was
// created or deleted since, so each name still has its ID. The map is
// emptied when the version moves, so it holds no more than the topics
// there are.
type topicIDCache struct {
	mu      sync.Mutex
	version uint64
	ids     map[string]uint32
}

// get returns the ID remembered for topic at version.
func (c *topicIDCache) get(topic string, version uint64) (uint32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		c.version, c.ids = version, nil
	}
	id, ok := c.ids[topic]
	return id, ok
}

// put remembers id for topic, read at version (no later than the ID).
func (c *topicIDCache) put(topic string, version uint64, id uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return // the topics changed since: the ID may be a deleted topic's
	}
	if c.ids == nil {
		c.ids = map[string]uint32{}
	}
	c.ids[topic] = id
}

// topicPart returns the ID of topic and the description of its partition
// part, as one description of the topic gives them. With a broker that
// tells its topics' version and describes one queue at that queue's cost
// (queueDescriber), that is one read of the partition, the topic's ID
// being read once while the version stays: the state of an idempotent
// producer that a restarted listener learns from each partition of a
// topic of many (conn.rebuild) then costs one description of the topic,
// not one a partition, each reading them all. A partition outside the
// topic is an error matching equeue.ErrQueueNotFound.
func (c *conn) topicPart(topic string, part int32) (uint32, equeue.QueueInfo, error) {
	if _, ok := c.s.b.(queueDescriber); ok {
		if v, versioned := c.s.topicsVersion(); versioned {
			id, ok := c.s.topicIDs.get(topic, v)
			if !ok {
				ti, err := c.s.b.Topic(c.ctx, topic)
				if err != nil {
					return 0, equeue.QueueInfo{}, err
				}
				id = ti.ID
				c.s.topicIDs.put(topic, v, id)
			}
			q, err := c.queueInfo(topic, part)
			if err != nil {
				return 0, equeue.QueueInfo{}, err
			}
			if now, _ := c.s.topicsVersion(); now == v {
				return id, q, nil
			}
			// The topics changed between the two reads: the partition
			// may be a topic's made again under the name.
		}
	}
	ti, err := c.s.b.Topic(c.ctx, topic)
	if err != nil {
		return 0, equeue.QueueInfo{}, err
	}
	if part < 0 || int(part) >= len(ti.Queues) {
		return ti.ID, equeue.QueueInfo{}, fmt.Errorf("%w: topic %q has %d partitions, asked for %d", equeue.ErrQueueNotFound, topic, len(ti.Queues), part)
	}
	return ti.ID, ti.Queues[part], nil
}
