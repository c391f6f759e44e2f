package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// forgedHeadersText is the text of gRPC's client-side refusal of headers
// over the server's bound, as a backend relaying another call's failure
// might answer it.
const forgedHeadersText = "header list size to send violates the maximum size (4096 bytes) set by server"

// A broker (or a backend behind it, relaying another call's failure) that
// answers Internal with the wording of gRPC's client-side refusal of
// oversized headers did receive the call: the client must not read that
// answer as the definite "refused before it left, nothing done". Before,
// the client told that refusal by its code and text alone, and a sent
// append or change answered so was reported as ErrInvalidArgument, not
// of unknown outcome. Only the refusal the client's own transport makes
// before the call's stream opens counts now.
func TestClient_ForgedHeadersRefusalIsNotADefiniteRefusal(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(append(srv.GRPCServerOptions(),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return nil, status.Error(codes.Internal, forgedHeadersText)
		}))...)
	remote.RegisterWithoutStreams(srv, gs) // appends are unary calls
	addr := serveOwn(t, srv, gs)
	c := dial(t, addr, nil)

	unknown := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		assert.Equal(t, codes.Internal, grpcCode(err), what)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", what, err)
		assert.NotErrorIs(t, err, equeue.ErrInvalidArgument, "%s: %v", what, err)
	}
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	unknown("append", err)
	done := make(chan error, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	unknown("append async", <-done)
	unknown("create topic", c.CreateTopic(ctx, "u", 1))
	_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: "t"}}})
	unknown("send back", err)

	// A read answered so is a broker's failure, not the caller's input.
	_, err = c.Topics(ctx)
	require.Error(t, err)
	assert.NotErrorIs(t, err, equeue.ErrInvalidArgument, "topics: %v", err)
}
