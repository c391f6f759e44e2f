package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A process that adds the Broker service to a gRPC server of its own
// (Server.Register) and makes that server with Server.GRPCServerOptions
// gets what the server's own gRPC server does: a request that does not
// decode is answered InvalidArgument, naming it malformed, not Internal,
// and one connection's streams are bounded by the connection's shares of
// the server's limits, with unary interceptors of the application's too.
// A client produces and consumes through it.
func TestServer_RegisterWithGRPCServerOptions(t *testing.T) {
	logged := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	for name, extra := range map[string][]grpc.ServerOption{
		"alone":                             nil,
		"with an application's interceptor": {grpc.ChainUnaryInterceptor(logged)},
	} {
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, nil)
			srv, err := remote.NewServer(e, &remote.ServerOptions{MaxInFlight: 4, MaxLongPolls: 4, MaxAppendStreams: 2})
			require.NoError(t, err)
			gs := grpc.NewServer(append(srv.GRPCServerOptions(), extra...)...)
			srv.Register(gs)
			addr := serveOwn(t, srv, gs)
			assertMalformedAnswered(t, addr, codes.InvalidArgument)
			assertConnStreamsBounded(t, addr, uint32(2+2+1+remote.ExtraConnStreams))
			assertProducesAndConsumes(t, e, addr)
		})
	}
}

// Without Server.GRPCServerOptions, on a gRPC server with gRPC's
// defaults, the Broker service serves all the same, but gRPC answers a
// request that does not decode Internal itself, as Register's doc tells.
func TestServer_RegisterWithoutGRPCServerOptions(t *testing.T) {
	e := openEngine(t, nil)
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer()
	srv.Register(gs)
	addr := serveOwn(t, srv, gs)
	assertMalformedAnswered(t, addr, codes.Internal)
	assertProducesAndConsumes(t, e, addr)
}

// assertProducesAndConsumes sends a message through the server at addr
// and pulls it back, through a remote client.
func assertProducesAndConsumes(t *testing.T, e *equeue.Engine, addr string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c := dial(t, addr, nil)
	p := newProducer(t, c)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("hello")})
	require.NoError(t, err)
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.Equal(t, "hello", string(res.Messages[0].Body))
}
