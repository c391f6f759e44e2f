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
	// reading holds, by topic, a channel closed when the description
	// under way for its ID ends (claim): a request's partitions, stored
	// on goroutines of their own, describe the topic once, not once each.
	reading map[string]chan struct{}
}

// claim returns the ID remembered for topic at version, or, with ok
// false, either a channel to wait on while another goroutine reads it
// (then claim again), or nil: the caller reads it, then calls done.
func (c *topicIDCache) claim(topic string, version uint64) (id uint32, ok bool, wait <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		c.version, c.ids = version, nil
	}
	if id, ok := c.ids[topic]; ok {
		return id, true, nil
	}
	if ch, ok := c.reading[topic]; ok {
		return 0, false, ch
	}
	if c.reading == nil {
		c.reading = map[string]chan struct{}{}
	}
	c.reading[topic] = make(chan struct{})
	return 0, false, nil
}

// done ends the read claim gave the caller, waking those waiting on it.
func (c *topicIDCache) done(topic string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.reading[topic]; ok {
		close(ch)
		delete(c.reading, topic)
	}
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
			id, ok, wait := c.s.topicIDs.claim(topic, v)
			for !ok && wait != nil {
				select {
				case <-wait:
				case <-c.ctx.Done():
					return 0, equeue.QueueInfo{}, c.ctx.Err()
				}
				id, ok, wait = c.s.topicIDs.claim(topic, v)
			}
			if !ok {
				var err error
				if id, err = c.readTopicID(topic, v); err != nil {
					return 0, equeue.QueueInfo{}, err
				}
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

// readTopicID describes topic for its ID, remembers it at version, and
// ends the read that topicIDCache.claim gave the caller, even when the
// broker panics (the waiting partitions then read it themselves).
func (c *conn) readTopicID(topic string, version uint64) (uint32, error) {
	defer c.s.topicIDs.done(topic)
	ti, err := c.s.b.Topic(c.ctx, topic)
	if err != nil {
		return 0, err
	}
	c.s.topicIDs.put(topic, version, ti.ID)
	return ti.ID, nil
}
