package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// lostJoinServer serves e through a gRPC server of the test's own that
// runs the first JoinGroup and then answers Unavailable, as a connection
// that broke after the broker took the join but before its answer arrived.
func lostJoinServer(t *testing.T, e *equeue.Engine) string {
	t.Helper()
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	var lost atomic.Bool
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if info.FullMethod == pb.Broker_JoinGroup_FullMethodName && err == nil && lost.CompareAndSwap(false, true) {
			return nil, status.Error(codes.Unavailable, "connection lost before the answer")
		}
		return resp, err
	}))
	srv.Register(gs)
	return serveOwn(t, srv, gs)
}

// A Start whose join the broker took but whose answer was lost returns
// ErrUnavailable; Start may be called again, and that Start joins: the
// member the lost join added is this consumer, not another incarnation
// holding its ID (and its queues) until the session timeout.
func TestConsumer_StartAgainAfterALostJoinAnswer(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	c := dial(t, lostJoinServer(t, e), nil)
	col := newCollector()
	cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Handler: col.handler("c"), HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cons.Close() })
	require.ErrorIs(t, cons.Start(ctx), remote.ErrUnavailable)
	require.NoError(t, cons.Start(ctx), "the retried Start is refused by the member its lost join added")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return col.has("m") }, "consumed after the second Start")
	require.NoError(t, cons.Close())
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, gi.Members, "Close left the group")
}

// The same for a PullConsumer.
func TestPullConsumer_StartAgainAfterALostJoinAnswer(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	c := dial(t, lostJoinServer(t, e), nil)
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "p", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	require.ErrorIs(t, pc.Start(ctx), remote.ErrUnavailable)
	require.NoError(t, pc.Start(ctx), "the retried Start is refused by the member its lost join added")
	assert.Len(t, pc.Assigned(), 2)
	require.NoError(t, pc.Close())
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, gi.Members, "Close left the group")
}
