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
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.DeleteGroup(ctx, &pb.DeleteGroupRequest{Name: name, Force: o.Force})
		return err
	})
}

// DeleteReplyTopic deletes a producer's reply topic; Producer.Close calls
// it. It deletes reply topics only, and needs the produce right for one
// its token named (NewReplyTopicName), else the admin right.
//
// Broker seam: producers call it; applications need not.
func (c *Client) DeleteReplyTopic(ctx context.Context, name string) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.DeleteReplyTopic(ctx, &pb.DeleteReplyTopicRequest{Name: name})
		return err
	})
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
