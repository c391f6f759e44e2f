package remote

import (
	"context"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Engine-wide counters over the wire (equeue.Engine.Stats), an admin read
// that `equeue stats --server` and the web console show. Tokens need
// RightAdmin.

func (v *service) EngineStats(ctx context.Context, _ *pb.EngineStatsRequest) (*pb.EngineStatsResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := v.e.Stats()
	return &pb.EngineStatsResponse{CorruptRecords: st.CorruptRecords, ExpiredMessages: st.ExpiredMessages, StoreBytes: st.StoreBytes}, nil
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
	return equeue.Stats{CorruptRecords: resp.GetCorruptRecords(), ExpiredMessages: resp.GetExpiredMessages(), StoreBytes: resp.GetStoreBytes()}, nil
}
