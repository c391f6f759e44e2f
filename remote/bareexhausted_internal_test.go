package remote

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// exhaustedOnce answers the first Append call ResourceExhausted: refused
// by the server's own refusal before the handler (refuse), or, as a
// proxy's rate limit may, in a status without the server's details after
// the handler ran (stored). Later calls run as usual.
type exhaustedOnce struct {
	refuse bool
	calls  atomic.Int64
}

func (x *exhaustedOnce) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != pb.Broker_Append_FullMethodName || x.calls.Add(1) > 1 {
		return handler(ctx, req)
	}
	if x.refuse {
		return nil, toStatus(fmt.Errorf("%w: 1 calls in flight", ErrBusy))
	}
	if _, err := handler(ctx, req); err != nil {
		return nil, err
	}
	return nil, status.Error(codes.ResourceExhausted, "rate limited")
}

// serveUnaryOnly serves e without the append stream (appends go as unary
// calls), behind x, until the test ends.
func serveUnaryOnly(t *testing.T, e *equeue.Engine, x *exhaustedOnce) string {
	t.Helper()
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(append(srv.GRPCServerOptions(), grpc.ChainUnaryInterceptor(x.intercept))...)
	RegisterWithoutStreams(srv, gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		gs.Stop()
		<-served
	})
	return lis.Addr().String()
}

// A ResourceExhausted without the server's details read as ErrBusy,
// "refused before the handler": the client sent the append again, and a
// proxy's rate limit answered after the broker stored it made it stored
// twice, or, its context ending, reported it not stored. Such an answer
// is now of unknown outcome, and not sent again.
func TestAppend_BareResourceExhaustedIsUnknownAndNotRetried(t *testing.T) {
	e := openTopicEngine(t)
	x := &exhaustedOnce{}
	c, err := Dial(serveUnaryOnly(t, e, x), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	ctx := context.Background()

	_, err = c.Append(ctx, reentryReq)
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "the broker may have stored it: %v", err)
	assert.NotErrorIs(t, err, ErrBusy, "no refusal of the server's")
	assert.NotErrorIs(t, err, equeue.ErrBusy)
	assert.Equal(t, int64(1), x.calls.Load(), "not sent again")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 1, "stored once")
}

// The server's own refusal (its BUSY reason in the details) still says
// nothing was stored: the client sends the append again, stored once.
func TestAppend_ServersBusyRefusalIsRetried(t *testing.T) {
	e := openTopicEngine(t)
	x := &exhaustedOnce{refuse: true}
	c, err := Dial(serveUnaryOnly(t, e, x), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	ctx := context.Background()

	_, err = c.Append(ctx, reentryReq)
	require.NoError(t, err)
	assert.Equal(t, int64(2), x.calls.Load(), "refused, then sent again")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 1, "stored once")
}
