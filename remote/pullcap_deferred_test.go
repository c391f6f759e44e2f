package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestPullMany_ADeferredMessageIsNotTakenForTheCap: a long-poll PullMany
// call one of whose pulls has a message that fits the client's limit
// alone, but not behind the empty answers of the pulls before it, is
// answered at once with nothing for every pull (the message waits for a
// call with room for it). The engine's MaxPullWait did not end that wait:
// the answer must not say so (equeue-pull-capped), or the client answers
// every long-poll of the call with nothing, long before its wait or the
// cap, where in process the message is delivered. Before, any answer that
// found nothing before the wait asked ended said so.
func TestPullMany_ADeferredMessageIsNotTakenForTheCap(t *testing.T) {
	addr := serveOneLargeMessage(t)
	raw := rawClient(t, addr)
	big := &pb.PullRequest{Topic: "t", Queue: 1, Max: 32, StoredBatchVersion: equeue.StoredBatchVersion}
	least := leastLimitAlone(t, raw, big)
	pulls := make([]*pb.PullRequest, 0, 21)
	for range 20 {
		pulls = append(pulls, &pb.PullRequest{Topic: "t", Queue: 0, Max: 32, StoredBatchVersion: equeue.StoredBatchVersion})
	}
	pulls = append(pulls, big)

	var header metadata.MD
	resp, err := raw.PullMany(ctxT(t), &pb.PullManyRequest{Pulls: pulls, MaxAnswerBytes: int32(least), Wait: durationpb.New(time.Minute)},
		grpc.Header(&header))
	require.NoError(t, err)
	require.Len(t, resp.GetItems(), 21)
	item := resp.GetItems()[20]
	require.Nil(t, item.GetError())
	require.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, item.GetResponse().GetStatus(), "the message waits for a call with room for it")
	assert.Empty(t, header.Get("equeue-pull-capped"), "an answer deferring a message was taken for one the engine's cap ended")
}
