package remote

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Admin is the engine's administration API. *equeue.Engine implements it
// in-process and *Client over the network, so tools can take either.
type Admin interface {
	// CreateTopic creates a topic with queues queues (0: the engine's
	// default, 4). It returns equeue.ErrTopicExists if the topic exists.
	CreateTopic(ctx context.Context, name string, queues int) error
	// AddQueues grows a live topic by n queues; producers use them from
	// their next route refresh and groups rebalance at once.
	AddQueues(ctx context.Context, name string, n int) error
	// DeleteTopic deletes a topic, its messages and every group's offsets
	// of it.
	DeleteTopic(ctx context.Context, name string) error
	// SetQueueWritable closes one queue to producers (false), so it can be
	// drained, or opens it again (true). Consumers keep reading it.
	SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error
	// Topics lists every topic, the engine's %RETRY% and %DLQ% topics
	// included, sorted by name.
	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
	// Topic describes one topic and its queues' offsets; an unknown name
	// returns equeue.ErrTopicNotFound.
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	// Groups lists every consumer group, sorted by name.
	Groups(ctx context.Context) ([]equeue.GroupInfo, error)
	// Group describes one group: members, assignment, committed offsets and
	// lag; an unknown name returns equeue.ErrGroupNotFound.
	Group(ctx context.Context, name string) (equeue.GroupInfo, error)
	// ResetOffsets stores new committed offsets for a group; its live
	// members restart from them at once.
	ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error
	// DeadLetters lists up to max (0: 32) dead letters of group from
	// offset from of its dead-letter topic. Engine and Client also offer
	// ListDeadLetters, the same call with a request struct that names the
	// two numbers; prefer it when you hold one of them.
	DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error)
	// Redrive sends the selected dead letters back, each at most once: to
	// the group's retry topic, or with req.ToTopic to their topics (see
	// equeue.Engine.Redrive). It returns how many were sent.
	Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error)
}

var (
	_ Admin = (*equeue.Engine)(nil)
	_ Admin = (*Client)(nil)
)

// CreateTopic creates a topic with the given number of queues (0 means the
// engine's default). It returns ErrTopicExists if the topic exists. A count
// beyond int32, which the wire carries, is refused with
// equeue.ErrInvalidArgument before it is sent, as CreateTopicWith and
// AddQueues refuse theirs.
func (c *Client) CreateTopic(ctx context.Context, name string, queues int) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	n, err := countInt32("queue count", queues)
	if err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.CreateTopic(ctx, &pb.CreateTopicRequest{Name: name, Queues: n})
		return err
	})
}

// CreateTopicWith creates a topic with options (queue count, dedup window,
// priorities, limits).
func (c *Client) CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error {
	if o.DedupWindow < 0 {
		return fmt.Errorf("%w: negative dedup window", equeue.ErrInvalidArgument)
	}
	if err := c.enter(ctx); err != nil {
		return err
	}
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	queues, err := countInt32("queue count", o.Queues)
	if err != nil {
		return err
	}
	priorities, err := countInt32("priorities", o.Priorities)
	if err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.CreateTopic(ctx, &pb.CreateTopicRequest{Name: name, Queues: queues, DedupWindow: durationPB(o.DedupWindow),
			Priorities: priorities, Limits: limitsToPB(o.Limits)})
		return err
	})
}

// AddQueues adds n queues to a topic.
func (c *Client) AddQueues(ctx context.Context, name string, n int) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	count, err := countInt32("queues to add", n)
	if err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.AddQueues(ctx, &pb.AddQueuesRequest{Name: name, Count: count})
		return err
	})
}

// DeleteTopic deletes a topic and all its messages.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if err := c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.DeleteTopic(ctx, &pb.DeleteTopicRequest{Name: name})
		return err
	}); err != nil {
		c.ahead.forgetIfDeleted(name, err)
		if errors.Is(err, equeue.ErrIndeterminate) {
			// The topic may be gone: what was read ahead of it may be of a
			// topic that no longer holds it.
			c.ahead.dropTopic(name)
		}
		return err
	}
	// What consumers of this client read ahead of it is gone with it.
	c.ahead.dropTopic(name)
	return nil
}

// SetQueueWritable opens or closes one queue to producers.
func (c *Client) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if err := checkQueue(name, queueID); err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.SetQueueWritable(ctx, &pb.SetQueueWritableRequest{Name: name, Queue: toInt32(queueID), Writable: writable})
		return err
	})
}

// Topics lists every topic, sorted by name.
func (c *Client) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	resp, err := c.api.ListTopics(ctx, &pb.ListTopicsRequest{})
	if err != nil {
		return nil, c.fail(err)
	}
	out := make([]equeue.TopicInfo, len(resp.GetTopics()))
	for i, t := range resp.GetTopics() {
		out[i] = topicFromPB(t)
	}
	return out, nil
}

// Topic describes one topic.
func (c *Client) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.TopicInfo{}, err
	}
	resp, err := c.api.DescribeTopic(ctx, &pb.DescribeTopicRequest{Name: name})
	if err != nil {
		return equeue.TopicInfo{}, c.fail(err)
	}
	return topicFromPB(resp.GetTopic()), nil
}

// Groups lists every consumer group, sorted by name.
func (c *Client) Groups(ctx context.Context) ([]equeue.GroupInfo, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	resp, err := c.api.ListGroups(ctx, &pb.ListGroupsRequest{})
	if err != nil {
		return nil, c.fail(err)
	}
	out := make([]equeue.GroupInfo, len(resp.GetGroups()))
	for i, g := range resp.GetGroups() {
		out[i] = groupFromPB(g)
	}
	return out, nil
}

// Group describes one consumer group.
func (c *Client) Group(ctx context.Context, name string) (equeue.GroupInfo, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.GroupInfo{}, err
	}
	resp, err := c.api.DescribeGroup(ctx, &pb.DescribeGroupRequest{Name: name})
	if err != nil {
		return equeue.GroupInfo{}, c.fail(err)
	}
	return groupFromPB(resp.GetGroup()), nil
}

// ResetOffsets moves a group's committed offsets.
func (c *Client) ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	in := &pb.ResetOffsetsRequest{Group: group, To: pb.ResetTarget(req.To), TimeUnixNano: startNanos(req.Time)}
	for ref, off := range req.Offsets {
		if err := checkQueue(ref.Topic, ref.Queue); err != nil {
			return err
		}
		in.Offsets = append(in.Offsets, &pb.QueueOffset{Topic: ref.Topic, Queue: toInt32(ref.Queue), Offset: off})
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.ResetOffsets(ctx, in)
		return err
	})
}

// ListDeadLetters lists a page of group's dead letters, as
// equeue.Engine.ListDeadLetters does, except that the broker ends the page
// early where it would pass the client's MaxMessageBytes: page on from the
// last entry's Offset plus one, as with any page. A req.Max beyond int32
// is clamped to its bound, which the broker refuses as the engine refuses
// req.Max (naming the bound): harmless. A dead letter that alone
// does not fit gives an error matching equeue.ErrMessageTooLarge (an
// *equeue.MessageTooLargeError naming its offset in the dead-letter topic).
func (c *Client) ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	resp, err := c.api.ListDeadLetters(ctx, &pb.ListDeadLettersRequest{Group: group, From: req.From, Max: toInt32(req.Max),
		MaxAnswerBytes: int32(min(c.maxAnswer, math.MaxInt32))})
	if err != nil {
		return nil, c.fail(err)
	}
	if len(resp.GetDeadLetters()) == 0 {
		return nil, nil
	}
	out := make([]equeue.DLQEntry, len(resp.GetDeadLetters()))
	for i, d := range resp.GetDeadLetters() {
		if out[i], err = deadLetterFromPB(d); err != nil {
			return nil, fmt.Errorf("remote: bad dead-letter answer: %w", err)
		}
	}
	return out, nil
}

// DeadLetters lists up to max (0 means 32) dead letters of group from offset
// from of its dead-letter topic.
//
// Deprecated: use ListDeadLetters, whose request names the two numbers.
func (c *Client) DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error) {
	return c.ListDeadLetters(ctx, group, equeue.ListDeadLettersRequest{From: from, Max: max})
}

// Redrive sends selected dead letters back to the group's retry topic, or
// with req.ToTopic to their topics (see equeue.Engine.Redrive), and returns
// how many were sent. On an error some may have been sent; the count is then
// 0, and the error says how many.
func (c *Client) Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error) {
	if err := c.enter(ctx); err != nil {
		return 0, err
	}
	var resp *pb.RedriveResponse
	if err := c.change(ctx, func(ctx context.Context) error {
		var err error
		resp, err = c.api.Redrive(ctx, &pb.RedriveRequest{Group: group, Offsets: req.Offsets, From: req.From, To: req.To, All: req.All, ToTopic: req.ToTopic})
		return err
	}); err != nil {
		return 0, err
	}
	return int(resp.GetSent()), nil
}
