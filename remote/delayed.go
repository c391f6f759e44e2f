package remote

import (
	"context"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The delayed-messages summary over the wire (equeue.Engine.Delayed), an
// admin read the web console shows. Tokens need RightAdmin.

func (v *service) ListDelayed(ctx context.Context, req *pb.ListDelayedRequest) (*pb.ListDelayedResponse, error) {
	info, err := v.e.Delayed(ctx, int(req.GetMax()))
	if err != nil {
		return nil, err
	}
	out := &pb.ListDelayedResponse{Pending: int64(info.Pending), Complete: info.Complete, Next: make([]*pb.DelayedEntry, len(info.Next))}
	for i, d := range info.Next {
		out.Next[i] = &pb.DelayedEntry{DeliverAtUnixNano: nanos(d.DeliverAt), Topic: d.Topic, Queue: toInt32(d.Queue)}
	}
	return out, nil
}

// Delayed reports how many delayed messages are pending and the delivery
// times and queues of the soonest max of them (see equeue.Engine.Delayed).
// A max beyond int32 is clamped to its bound, which the broker refuses as
// the engine refuses max (naming the bound): harmless.
func (c *Client) Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.DelayedInfo{}, err
	}
	resp, err := c.api.ListDelayed(ctx, &pb.ListDelayedRequest{Max: toInt32(max)})
	if err != nil {
		return equeue.DelayedInfo{}, c.fail(err)
	}
	info := equeue.DelayedInfo{Pending: int(resp.GetPending()), Complete: resp.GetComplete(), Next: make([]equeue.DelayedEntry, len(resp.GetNext()))}
	for i, d := range resp.GetNext() {
		info.Next[i] = equeue.DelayedEntry{DeliverAt: fromNanos(d.GetDeliverAtUnixNano()), QueueRef: equeue.QueueRef{Topic: d.GetTopic(), Queue: int(d.GetQueue())}}
	}
	return info, nil
}
