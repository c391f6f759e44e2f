package remote

import (
	"context"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// limitsToPB encodes topic limits; none is nil.
func limitsToPB(l equeue.TopicLimits) *pb.TopicLimits {
	if l.IsZero() {
		return nil
	}
	return &pb.TopicLimits{MaxMessages: l.MaxMessages, Overflow: pb.Overflow(l.Overflow),
		DefaultTtl: durationPB(l.DefaultTTL), RetentionAge: durationPB(l.RetentionAge),
		MaxBytes: l.MaxBytes, Unconsumed: pb.Unconsumed(l.Unconsumed)}
}

// limitsFromPB decodes and validates topic limits; nil is none.
func limitsFromPB(l *pb.TopicLimits) (equeue.TopicLimits, error) {
	if l == nil {
		return equeue.TopicLimits{}, nil
	}
	ttl, err := fromDurationPB(l.GetDefaultTtl())
	if err != nil {
		return equeue.TopicLimits{}, err
	}
	age, err := fromDurationPB(l.GetRetentionAge())
	if err != nil {
		return equeue.TopicLimits{}, err
	}
	out := equeue.TopicLimits{MaxMessages: l.GetMaxMessages(), Overflow: equeue.OverflowPolicy(l.GetOverflow()), DefaultTTL: ttl, RetentionAge: age,
		MaxBytes: l.GetMaxBytes(), Unconsumed: equeue.UnconsumedPolicy(l.GetUnconsumed())}
	return out, out.Validate()
}

func (v *service) SetTopicLimits(ctx context.Context, req *pb.SetTopicLimitsRequest) (*pb.SetTopicLimitsResponse, error) {
	l, err := limitsFromPB(req.GetLimits())
	if err != nil {
		return nil, err
	}
	if err := v.e.SetTopicLimits(ctx, req.GetName(), l); err != nil {
		return nil, err
	}
	return &pb.SetTopicLimitsResponse{}, nil
}

// SetTopicLimits replaces a topic's limits and defaults, as
// equeue.Engine.SetTopicLimits does.
func (c *Client) SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	if err := c.enter(ctx); err != nil {
		return err
	}
	return c.change(ctx, func(ctx context.Context) error {
		_, err := c.api.SetTopicLimits(ctx, &pb.SetTopicLimitsRequest{Name: name, Limits: limitsToPB(l)})
		return err
	})
}
