package equeue

import (
	"context"
	"fmt"
)

// QueueInfo describes one queue of a topic as Topic describes each of
// them, at the cost of that queue alone: Topic reads every queue of the
// topic, so a caller that wants a few queues of a topic of many (the
// Kafka listener's ListOffsets and Produce, per partition) would pay
// for all of them each time. A name no topic can have gets
// ErrInvalidName, an unknown topic ErrTopicNotFound and a queue outside
// the topic ErrQueueNotFound.
func (e *Engine) QueueInfo(ctx context.Context, topic string, queue int) (QueueInfo, error) {
	if err := e.enter(ctx); err != nil {
		return QueueInfo{}, err
	}
	defer e.leave()
	if err := validateTopicName(topic, true); err != nil { // whether or not the topic exists
		return QueueInfo{}, err
	}
	t, ok := e.lookupTopic(topic)
	if !ok {
		return QueueInfo{}, fmt.Errorf("%w: %q", ErrTopicNotFound, topic)
	}
	q, err := t.queue(queue)
	if err != nil {
		return QueueInfo{}, err
	}
	return q.info(), nil
}

// QueueInfo describes one queue of a topic of the namespace (see
// Engine.QueueInfo).
func (n *Namespace) QueueInfo(ctx context.Context, topic string, queue int) (QueueInfo, error) {
	qi, err := n.e.QueueInfo(ctx, n.in(topic), queue)
	return qi, n.err(err)
}

// info describes q: its bounds, read together, and the messages they
// hold less the offsets known lost.
func (q *queue) info() QueueInfo {
	min, next, lost := q.extent()
	held := lost.held(min, next)
	return QueueInfo{ID: q.id, MinOffset: min, MaxOffset: next, Writable: q.writable.Load(), Messages: held}
}
