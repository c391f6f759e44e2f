package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/equeue-go/equeue"
)

// The engine's admin calls, run on the leader's engine, so a node can be
// served by remote.NewBackendServer. A follower refuses them with a
// *NotLeaderError.

// WaitAny waits on the leader until one of pulls has data (see Engine.WaitAny).
func (n *Node) WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error {
	return call0(n, func(e *equeue.Engine) error { return e.WaitAny(ctx, pulls, wait) })
}

// Topics lists the topics.
func (n *Node) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	return call(n, func(e *equeue.Engine) ([]equeue.TopicInfo, error) { return e.Topics(ctx) })
}

// Topic describes one topic.
func (n *Node) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	return call(n, func(e *equeue.Engine) (equeue.TopicInfo, error) { return e.Topic(ctx, name) })
}

// QueueInfo describes one queue of a topic, at that queue's cost (see
// equeue.Engine.QueueInfo).
func (n *Node) QueueInfo(ctx context.Context, topic string, queue int) (equeue.QueueInfo, error) {
	return call(n, func(e *equeue.Engine) (equeue.QueueInfo, error) { return e.QueueInfo(ctx, topic, queue) })
}

// CreateTopic creates a topic with queues queues (0: the default).
func (n *Node) CreateTopic(ctx context.Context, name string, queues int) error {
	return call0(n, func(e *equeue.Engine) error { return e.CreateTopic(ctx, name, queues) })
}

// CreateTopicWith creates a topic with options.
func (n *Node) CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error {
	return call0(n, func(e *equeue.Engine) error { return e.CreateTopicWith(ctx, name, o) })
}

// AddQueues adds queues to a topic.
func (n *Node) AddQueues(ctx context.Context, name string, count int) error {
	return call0(n, func(e *equeue.Engine) error { return e.AddQueues(ctx, name, count) })
}

// SetQueueWritable opens or closes a queue to producers.
func (n *Node) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	return call0(n, func(e *equeue.Engine) error { return e.SetQueueWritable(ctx, name, queueID, writable) })
}

// DeleteTopic deletes a topic.
func (n *Node) DeleteTopic(ctx context.Context, name string) error {
	return call0(n, func(e *equeue.Engine) error { return e.DeleteTopic(ctx, name) })
}

// Groups lists the consumer groups.
func (n *Node) Groups(ctx context.Context) ([]equeue.GroupInfo, error) {
	return call(n, func(e *equeue.Engine) ([]equeue.GroupInfo, error) { return e.Groups(ctx) })
}

// Group describes one group.
func (n *Node) Group(ctx context.Context, name string) (equeue.GroupInfo, error) {
	return call(n, func(e *equeue.Engine) (equeue.GroupInfo, error) { return e.Group(ctx, name) })
}

// ResetOffsets moves a group's committed offsets.
func (n *Node) ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error {
	return call0(n, func(e *equeue.Engine) error { return e.ResetOffsets(ctx, group, req) })
}

// DeadLetters lists a group's dead letters.
func (n *Node) DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error) {
	return call(n, func(e *equeue.Engine) ([]equeue.DLQEntry, error) {
		return e.ListDeadLetters(ctx, group, equeue.ListDeadLettersRequest{From: from, Max: max})
	})
}

// Redrive sends dead letters back to the group's retry topic, or with
// req.ToTopic to their topics. The engine sends each in a write of its
// own: a redrive cut short by the end of the leader's tenure after it sent
// some fails with an error matching equeue.ErrIndeterminate, never with a
// refusal that did nothing; call it again on the new leader to send the
// rest (those sent are marked, and not sent twice). That holds as well
// when the engine's close began between two of them: the engine then
// answers the next one with a bare equeue.ErrClosed.
func (n *Node) Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error) {
	return call(n, func(e *equeue.Engine) (int, error) {
		sent, err := e.Redrive(ctx, group, req)
		if sent > 0 {
			err = cutShortAfterWrites(fmt.Sprintf("redrive of %q after %d dead letters sent back", group, sent), err)
		}
		return sent, err
	})
}

// ListDeadLetters lists a group's dead letters.
func (n *Node) ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error) {
	return call(n, func(e *equeue.Engine) ([]equeue.DLQEntry, error) { return e.ListDeadLetters(ctx, group, req) })
}

// Delayed reports the leader's pending delayed messages (see Engine.Delayed).
func (n *Node) Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error) {
	return call(n, func(e *equeue.Engine) (equeue.DelayedInfo, error) { return e.Delayed(ctx, max) })
}

// EngineStats returns the leader engine's counters and store size (see
// Engine.Stats).
func (n *Node) EngineStats(ctx context.Context) (equeue.Stats, error) {
	return call(n, func(e *equeue.Engine) (equeue.Stats, error) {
		if err := ctx.Err(); err != nil {
			return equeue.Stats{}, err
		}
		return e.Stats(), nil
	})
}

// DeleteGroup deletes a consumer group on the leader (see Engine.DeleteGroup).
// The engine deletes a group in several writes: one cut short by the end
// of the leader's tenure fails with an error matching
// equeue.ErrIndeterminate (part of the group may be deleted), never with
// a refusal that did nothing; call it again on the new leader to finish.
func (n *Node) DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error {
	return call0(n, func(e *equeue.Engine) error {
		return cutShort(fmt.Sprintf("delete group %q", name), e.DeleteGroup(ctx, name, o))
	})
}

// DeleteReplyTopic deletes a requester's reply topic on the leader (see
// Engine.DeleteReplyTopic).
func (n *Node) DeleteReplyTopic(ctx context.Context, name string) error {
	return call0(n, func(e *equeue.Engine) error { return e.DeleteReplyTopic(ctx, name) })
}

// SetTopicLimits replaces a topic's limits on the leader (see
// Engine.SetTopicLimits).
func (n *Node) SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error {
	return call0(n, func(e *equeue.Engine) error { return e.SetTopicLimits(ctx, name, l) })
}
