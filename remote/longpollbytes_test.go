package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestLongPollBytes_HeldRequestsAreBounded holds PullMany long-polls whose
// requests are large (long filters): one connection holds at most half of
// ServerOptions.MaxLongPollBytes of held requests, and all connections
// together at most all of it; a long-poll past either is refused as busy
// however few long-polls are held, a small one still fits, and a place
// given back is taken again.
func TestLongPollBytes_HeldRequestsAreBounded(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxPullWait: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const budget = 2 << 20
	s := startServer(t, e, "", &remote.ServerOptions{MaxMessageBytes: 1 << 20, MaxLongPollBytes: budget})

	filter := "a" + strings.Repeat(" || a", 2000)
	big := &pb.PullManyRequest{Wait: durationpb.New(time.Hour)}
	for range 75 {
		big.Pulls = append(big.Pulls, &pb.PullRequest{Topic: "t", Filter: filter})
	}
	size := proto.Size(big)
	require.Greater(t, size, budget/4, "two do not fit a connection's share")
	require.Greater(t, size, budget/3, "three do not fit the budget")
	require.Less(t, size, 1<<20, "one fits MaxMessageBytes")

	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	held := func(api pb.BrokerClient, req *pb.PullManyRequest) context.CancelFunc {
		t.Helper()
		before := remote.HeldLongPolls(s.srv)
		cctx, cancel := context.WithCancel(hctx)
		go func() { _, _ = api.PullMany(cctx, req) }()
		eventually(t, 30*time.Second, func() bool { return remote.HeldLongPolls(s.srv) == before+1 }, "the long-poll is not held")
		return cancel
	}
	refused := func(api pb.BrokerClient, req *pb.PullManyRequest, why string) {
		t.Helper()
		_, err := api.PullMany(ctx, req)
		require.Error(t, err, why)
		assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%s: %v", why, err)
		assert.ErrorContains(t, err, "MaxLongPollBytes", why)
	}

	a := rawBroker(t, s.addr)
	held(a, big)
	refused(a, big, "past the connection's share")
	b := rawBroker(t, s.addr)
	freeB := held(b, big)
	c := rawBroker(t, s.addr)
	refused(c, big, "past the server's budget")
	small := &pb.PullManyRequest{Wait: durationpb.New(time.Hour), Pulls: []*pb.PullRequest{{Topic: "t"}}}
	held(c, small)
	freeB()
	eventually(t, 30*time.Second, func() bool { return remote.HeldLongPolls(s.srv) == 2 }, "the long-poll did not end")
	held(c, big)
}
