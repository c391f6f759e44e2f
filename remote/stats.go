package remote

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Engine-wide counters over the wire (equeue.Engine.Stats), an admin read
// that `equeue stats --server` and the web console show. Tokens need
// RightAdmin, and a token of the whole engine: one scoped to a namespace
// is refused (ErrPermissionDenied), the counters being every namespace's.

func (v *service) EngineStats(ctx context.Context, _ *pb.EngineStatsRequest) (*pb.EngineStatsResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ns, ok := v.e.(*equeue.Namespace); ok {
		// The counters are the whole engine's, every namespace's together:
		// a token scoped to one may not read them, as /metrics refuses it.
		return nil, toStatus(fmt.Errorf("%w: engine stats are the whole engine's; the token is scoped to namespace %q",
			ErrPermissionDenied, ns.Name()))
	}
	var st equeue.Stats
	switch b := v.e.(type) {
	case interface {
		EngineStats(context.Context) (equeue.Stats, error)
	}:
		var err error
		if st, err = b.EngineStats(ctx); err != nil {
			return nil, err
		}
	case interface{ Stats() equeue.Stats }:
		st = b.Stats()
	default:
		return nil, status.Error(codes.Unimplemented, "this backend reports no engine stats")
	}
	return &pb.EngineStatsResponse{CorruptRecords: st.CorruptRecords, ExpiredMessages: st.ExpiredMessages, DeletedTopicRetries: st.DeletedTopicRetries, StoreBytes: st.StoreBytes, NoSpaceRefusals: st.NoSpaceRefusals, DedupIds: st.DedupIDs, LostDedupGroups: st.LostDedupGroups,
		UnsupportedFormatPulls: st.UnsupportedFormatPulls, ConsumerHookPanics: st.ConsumerHookPanics, ParkedDelayedMessages: st.ParkedDelayedMessages}, nil
}

// EngineStats returns the broker engine's counters and store size (see
// equeue.Engine.Stats).
func (c *Client) EngineStats(ctx context.Context) (equeue.Stats, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.Stats{}, err
	}
	resp, err := c.api.EngineStats(ctx, &pb.EngineStatsRequest{})
	if err != nil {
		return equeue.Stats{}, c.fail(err)
	}
	return equeue.Stats{CorruptRecords: resp.GetCorruptRecords(), ExpiredMessages: resp.GetExpiredMessages(), DeletedTopicRetries: resp.GetDeletedTopicRetries(), StoreBytes: resp.GetStoreBytes(), NoSpaceRefusals: resp.GetNoSpaceRefusals(), DedupIDs: resp.GetDedupIds(), LostDedupGroups: resp.GetLostDedupGroups(),
		UnsupportedFormatPulls: resp.GetUnsupportedFormatPulls(), ConsumerHookPanics: resp.GetConsumerHookPanics(), ParkedDelayedMessages: resp.GetParkedDelayedMessages()}, nil
}
