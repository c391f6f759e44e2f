package remote_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestServer_LimitsAsLargeAsAnIntHoldNothingBack serves with MaxInFlight,
// MaxLongPolls, MaxAppendStreams and MaxLongPollBytes as large as an int
// holds ("no bound"), the per-connection shares at their defaults (half
// of each): the server takes appends on a stream and on unary calls, and
// one connection holds many long-polls at once, none refused as busy.
// Before, halving those totals overflowed: the first AppendStream call
// panicked the server (a channel of negative size), and one connection
// could hold a single unary call and two long-polls at a time; and the
// sum of the shares that bounds a connection's HTTP/2 streams overflowed
// too, wrapping the bound around to 64.
func TestServer_LimitsAsLargeAsAnIntHoldNothingBack(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: math.MaxInt, MaxLongPolls: math.MaxInt,
		MaxAppendStreams: math.MaxInt, MaxLongPollBytes: math.MaxInt64})
	c := dial(t, s.addr, nil)
	p := newProducer(t, c)

	futures := make([]*equeue.SendFuture, 100)
	for i := range futures {
		futures[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)})
	}
	for i, f := range futures {
		_, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
	}

	// Long-polls of one connection at once, on raw calls (a client
	// retries ErrBusy), more than the HTTP/2 stream bound's room beyond
	// the shares: the server holds them all at once, and each waits its
	// time out, none refused.
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	// Unary appends, several at once on the one connection.
	var awg sync.WaitGroup
	aerrs := make([]error, 8)
	for i := range aerrs {
		awg.Go(func() {
			req := &pb.AppendRequest{Topic: "t", Queue: 0, Messages: []*pb.Message{{Topic: "t", Body: fmt.Appendf(nil, "u-%d", i)}}}
			aerrs[i] = conn.Invoke(ctx, pb.Broker_Append_FullMethodName, req, new(pb.AppendResponse))
		})
	}
	awg.Wait()
	for i, err := range aerrs {
		require.NoError(t, err, "unary append %d", i)
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(len(futures)+len(aerrs)), info.Queues[0].MaxOffset, "every append stored")

	const polls = 100
	var wg sync.WaitGroup
	errs := make([]error, polls)
	for i := range polls {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			req := &pb.PullRequest{Topic: "t", Queue: 0, Offset: 108, Wait: durationpb.New(2 * time.Second)}
			errs[i] = conn.Invoke(pctx, pb.Broker_Pull_FullMethodName, req, new(pb.PullResponse))
		})
	}
	eventually(t, 10*time.Second, func() bool { return remote.HeldLongPolls(s.srv) == polls },
		"%d long-polls held at once: %v", polls, func() any { return remote.HeldLongPolls(s.srv) })
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "long-poll %d", i)
	}
}
