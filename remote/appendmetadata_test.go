package remote_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// seenTraces records the "x-trace" metadata the broker's interceptors saw
// on append calls, unary and streamed (a producer's route look-up, say,
// is not one).
type seenTraces struct {
	mu     sync.Mutex
	traces []string
}

func (s *seenTraces) record(ctx context.Context, method string) {
	if method != "/equeue.v1.Broker/Append" && method != "/equeue.v1.Broker/AppendStream" {
		return
	}
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.traces = append(s.traces, md.Get("x-trace")...)
}

func (s *seenTraces) saw(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.traces {
		if t == v {
			return true
		}
	}
	return false
}

// An append whose context carries outgoing metadata of the caller's (a
// per-call token, a trace header) reaches the broker with it, as a unary
// call's does, whether it is sent by Append, AppendAsync or a producer's
// SendAsync. Before, the client put such an append on its shared append
// stream, opened on a context of its own, and the caller's metadata was
// silently dropped.
func TestClient_AppendCarriesCallersMetadata(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	seen := new(seenTraces)
	opts := append(srv.GRPCServerOptions(),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			seen.record(ctx, info.FullMethod)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			seen.record(ss.Context(), info.FullMethod)
			return h(srv, ss)
		}))
	gs := grpc.NewServer(opts...)
	srv.Register(gs)
	addr := serveOwn(t, srv, gs)
	c := dial(t, addr, nil)

	// A plain append first: the client's append stream is open.
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("plain")}}})
	require.NoError(t, err)

	_, err = c.Append(metadata.AppendToOutgoingContext(ctx, "x-trace", "append"),
		&equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.NoError(t, err)
	assert.True(t, seen.saw("append"), "Append: the broker saw the caller's metadata")

	done := make(chan error, 1)
	c.AppendAsync(metadata.AppendToOutgoingContext(ctx, "x-trace", "async"),
		&equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	require.NoError(t, <-done)
	assert.True(t, seen.saw("async"), "AppendAsync: the broker saw the caller's metadata")

	p := newProducer(t, c)
	_, err = p.SendAsync(metadata.AppendToOutgoingContext(ctx, "x-trace", "producer"),
		&equeue.Message{Topic: "t", Body: []byte("c")}).Result(ctx)
	require.NoError(t, err)
	assert.True(t, seen.saw("producer"), "Producer.SendAsync: the broker saw the caller's metadata")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 4, "every append was stored once")
}
