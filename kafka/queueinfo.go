package kafka

import (
	"context"
	"fmt"

	"github.com/equeue-go/equeue"
)

// queueDescriber is a Broker that describes one queue of a topic at that
// queue's cost (equeue.Engine.QueueInfo): Topic reads every queue of the
// topic, so a request naming partitions one at a time (sarama's
// GetOffset, a Produce per partition) would cost their count squared.
type queueDescriber interface {
	QueueInfo(ctx context.Context, topic string, queue int) (equeue.QueueInfo, error)
}

// queueInfo describes partition part of topic: with the Broker's
// QueueInfo when it has one, else from the topic's description. A
// partition outside the topic is an error matching
// equeue.ErrQueueNotFound.
func (c *conn) queueInfo(topic string, part int32) (equeue.QueueInfo, error) {
	if d, ok := c.s.b.(queueDescriber); ok {
		return d.QueueInfo(c.ctx, topic, int(part))
	}
	ti, err := c.s.b.Topic(c.ctx, topic)
	if err != nil {
		return equeue.QueueInfo{}, err
	}
	if part < 0 || int(part) >= len(ti.Queues) {
		return equeue.QueueInfo{}, fmt.Errorf("%w: topic %q has %d partitions, asked for %d", equeue.ErrQueueNotFound, topic, len(ti.Queues), part)
	}
	return ti.Queues[part], nil
}
