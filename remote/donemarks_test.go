package remote_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// olderBrokerServer serves e as a broker from before done marks would:
// it drops MessageAttempts.done from the commits it reads (an unknown
// field to it) and counts the commits that carried one.
func olderBrokerServer(t *testing.T, e *equeue.Engine, withDone *atomic.Int64) string {
	t.Helper()
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if in, ok := req.(*pb.CommitOffsetsRequest); ok {
			for _, o := range in.Offsets {
				for _, a := range o.Attempts {
					if a.Done {
						withDone.Add(1)
						a.Done = false
					}
				}
			}
		}
		return h(ctx, req)
	}))
	srv.Register(gs)
	return serveOwn(t, srv, gs)
}

// TestCommit_DoneMarksToAnOlderBrokerAreDropped: a broker from before done
// marks refuses them (they read as entries of no attempts); the client
// commits again without them, so the commit is stored.
func TestCommit_DoneMarksToAnOlderBrokerAreDropped(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
		require.NoError(t, err)
	}
	var withDone atomic.Int64
	c := dial(t, olderBrokerServer(t, e, &withDone), nil)
	jr, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.NotEmpty(t, jr.Queues)
	req := &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: jr.Queues[0], Offset: 0,
		Attempts: []equeue.MessageAttempts{{Offset: 0, Attempts: 1}, {Offset: 2, Done: true}}}}}
	require.NoError(t, c.CommitOffsets(ctx, req))
	require.Equal(t, int64(1), withDone.Load(), "the first commit carried the done mark")
	got, err := c.FetchOffsets(ctx, "g", "m", jr.Queues[:1])
	require.NoError(t, err)
	require.Equal(t, []equeue.MessageAttempts{{Offset: 0, Attempts: 1}}, got[0].Attempts, "stored without the done mark")
}
