package remote

import (
	"context"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// GroupDeleter is implemented by *equeue.Engine in-process and *Client over
// the network: tools that delete groups take either.
type GroupDeleter interface {
	// DeleteGroup deletes a consumer group and everything stored for it
	// (see equeue.Engine.DeleteGroup).
	DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error
}

var (
	_ GroupDeleter = (*equeue.Engine)(nil)
	_ GroupDeleter = (*Client)(nil)
)

// DeleteGroup deletes a consumer group, its offsets, retry and dead-letter
// topics (see equeue.Engine.DeleteGroup). It needs the admin right.
func (c *Client) DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if _, err := c.api.DeleteGroup(ctx, &pb.DeleteGroupRequest{Name: name, Force: o.Force}); err != nil {
		return c.fail(err)
	}
	return nil
}

// DeleteReplyTopic deletes a producer's reply topic; Producer.Close calls
// it. It needs the produce right, and deletes reply topics only.
//
// Broker seam: producers call it; applications need not.
func (c *Client) DeleteReplyTopic(ctx context.Context, name string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if _, err := c.api.DeleteReplyTopic(ctx, &pb.DeleteReplyTopicRequest{Name: name}); err != nil {
		return c.fail(err)
	}
	return nil
}

func (v *service) DeleteGroup(ctx context.Context, req *pb.DeleteGroupRequest) (*pb.DeleteGroupResponse, error) {
	if err := v.e.DeleteGroup(ctx, req.GetName(), equeue.DeleteGroupOptions{Force: req.GetForce()}); err != nil {
		return nil, err
	}
	return &pb.DeleteGroupResponse{}, nil
}

func (v *service) DeleteReplyTopic(ctx context.Context, req *pb.DeleteReplyTopicRequest) (*pb.DeleteReplyTopicResponse, error) {
	if err := v.e.DeleteReplyTopic(ctx, req.GetName()); err != nil {
		return nil, err
	}
	return &pb.DeleteReplyTopicResponse{}, nil
}

// replyRights adjusts what a call on a reply topic needs. The requester
// (produce right) creates its reply topic with Route, reads replies with
// Pull and deletes the topic with DeleteReplyTopic; a service answering
// from its handler (consume right) writes replies with Append. So Pull and
// Append of a reply topic take either right; Route keeps the produce
// right, so a consume-only token cannot create topics. Other calls keep
// need.
func replyRights(method string, req any, need Rights) Rights {
	switch r := req.(type) {
	case *pb.AppendRequest:
		return appendRights(r.GetTopic())
	case *pb.PullRequest:
		if equeue.IsReplyTopic(r.GetTopic()) {
			return RightProduce | RightConsume
		}
	case *pb.DeleteReplyTopicRequest:
		return RightProduce
	}
	return need
}

// appendRights is what an Append of topic needs: either right for a reply
// topic, else RightProduce.
func appendRights(topic string) Rights {
	if equeue.IsReplyTopic(topic) {
		return RightProduce | RightConsume
	}
	return RightProduce
}
