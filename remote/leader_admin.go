package remote

import (
	"context"

	"github.com/equeue-go/equeue"
)

// The admin calls of a ClusterClient run on the leader. Reads and changes
// that are the same when repeated (set-writable, reset) are retried when a
// node cannot be reached; the others (create, add queues, delete, redrive)
// are retried only on a refusal, like Append.

var _ Admin = (*ClusterClient)(nil)

// CreateTopic creates a topic on the cluster.
func (cc *ClusterClient) CreateTopic(ctx context.Context, name string, queues int) error {
	return onCluster0(ctx, cc, false, func(c *Client) error { return c.CreateTopic(ctx, name, queues) })
}

// CreateTopicWith creates a topic with options on the cluster.
func (cc *ClusterClient) CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error {
	return onCluster0(ctx, cc, false, func(c *Client) error { return c.CreateTopicWith(ctx, name, o) })
}

// AddQueues adds queues to a topic.
func (cc *ClusterClient) AddQueues(ctx context.Context, name string, n int) error {
	return onCluster0(ctx, cc, false, func(c *Client) error { return c.AddQueues(ctx, name, n) })
}

// DeleteTopic deletes a topic.
func (cc *ClusterClient) DeleteTopic(ctx context.Context, name string) error {
	return onCluster0(ctx, cc, false, func(c *Client) error { return c.DeleteTopic(ctx, name) })
}

// SetQueueWritable opens or closes a queue to producers.
func (cc *ClusterClient) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.SetQueueWritable(ctx, name, queueID, writable) })
}

// SetTopicLimits replaces a topic's limits and defaults (see
// Client.SetTopicLimits). Setting the same limits twice is the same as once.
func (cc *ClusterClient) SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.SetTopicLimits(ctx, name, l) })
}

// Topics lists the topics.
func (cc *ClusterClient) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	return onCluster(ctx, cc, true, func(c *Client) ([]equeue.TopicInfo, error) { return c.Topics(ctx) })
}

// Topic describes a topic.
func (cc *ClusterClient) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.TopicInfo, error) { return c.Topic(ctx, name) })
}

// Groups lists the consumer groups.
func (cc *ClusterClient) Groups(ctx context.Context) ([]equeue.GroupInfo, error) {
	return onCluster(ctx, cc, true, func(c *Client) ([]equeue.GroupInfo, error) { return c.Groups(ctx) })
}

// Group describes a group.
func (cc *ClusterClient) Group(ctx context.Context, name string) (equeue.GroupInfo, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.GroupInfo, error) { return c.Group(ctx, name) })
}

// ResetOffsets moves a group's committed offsets.
func (cc *ClusterClient) ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.ResetOffsets(ctx, group, req) })
}

// DeadLetters lists a group's dead letters.
func (cc *ClusterClient) DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error) {
	return onCluster(ctx, cc, true, func(c *Client) ([]equeue.DLQEntry, error) { return c.DeadLetters(ctx, group, from, max) })
}

// Redrive sends dead letters back to the group's retry topic, or with
// req.ToTopic to their topics.
func (cc *ClusterClient) Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error) {
	return onCluster(ctx, cc, false, func(c *Client) (int, error) { return c.Redrive(ctx, group, req) })
}

// ListDeadLetters lists a group's dead letters (see Client.ListDeadLetters).
func (cc *ClusterClient) ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error) {
	return onCluster(ctx, cc, true, func(c *Client) ([]equeue.DLQEntry, error) { return c.ListDeadLetters(ctx, group, req) })
}

// Delayed reports the leader's pending delayed messages (see Client.Delayed).
func (cc *ClusterClient) Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.DelayedInfo, error) { return c.Delayed(ctx, max) })
}

// EngineStats returns the leader engine's counters and store size (see
// Client.EngineStats).
func (cc *ClusterClient) EngineStats(ctx context.Context) (equeue.Stats, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.Stats, error) { return c.EngineStats(ctx) })
}

// DeleteGroup deletes a consumer group (see Client.DeleteGroup).
func (cc *ClusterClient) DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error {
	_, err := onCluster(ctx, cc, false, func(c *Client) (struct{}, error) { return struct{}{}, c.DeleteGroup(ctx, name, o) })
	return err
}

// DeleteReplyTopic deletes a requester's reply topic (see
// Client.DeleteReplyTopic).
func (cc *ClusterClient) DeleteReplyTopic(ctx context.Context, name string) error {
	_, err := onCluster(ctx, cc, false, func(c *Client) (struct{}, error) { return struct{}{}, c.DeleteReplyTopic(ctx, name) })
	return err
}
