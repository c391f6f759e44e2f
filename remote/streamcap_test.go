package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// rawBroker is a Broker client on a connection of its own, for calls the
// Client would not make.
func rawBroker(t *testing.T, addr string) pb.BrokerClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewBrokerClient(conn)
}

// openStreams opens AppendStream calls on api until the server refuses
// one or n are open, and returns how many opened and the refusal. The
// calls end with ctx.
func openStreams(t *testing.T, ctx context.Context, api pb.BrokerClient, n int) (int, error) {
	t.Helper()
	for i := range n {
		st, err := api.AppendStream(ctx)
		require.NoError(t, err)
		md, err := st.Header()
		require.NoError(t, err)
		if len(md.Get("equeue-max-message-bytes")) == 0 {
			// Refused before it began: the status says why.
			_, err = st.Recv()
			require.Error(t, err)
			return i, remote.FromStatus(err)
		}
	}
	return n, nil
}

// One connection could open AppendStream calls without end, each holding
// two goroutines of the server's and its buffers however idle (2,000 of
// them took 6,000 goroutines and 20 MiB). Past MaxAppendStreams, from every
// connection together (and past its share on one connection,
// TestFairness_*), a call is refused at once as busy (ErrBusy); a
// client refused so still sends, with unary calls, and opens a stream again
// once there is room.
func TestAppendStream_MaxAppendStreams(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const limit = 8
	_, addr, unary := serveCountingAppends(t, e, limit)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	// Two connections take half each (MaxAppendStreamsPerConn).
	for range 2 {
		opened, err := openStreams(t, hctx, rawBroker(t, addr), 4*limit)
		assert.Equal(t, limit/2, opened)
		require.ErrorIs(t, err, remote.ErrBusy)
		assert.ErrorIs(t, err, equeue.ErrBusy)
	}
	opened, err := openStreams(t, hctx, rawBroker(t, addr), 4*limit)
	assert.Zero(t, opened, "a refused call holds no place")
	require.ErrorIs(t, err, remote.ErrBusy)
	assert.ErrorContains(t, err, "append streams open")

	// Another client's producer sends all the same, with unary calls.
	p := newProducer(t, dial(t, addr, nil))
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("sync")})
	require.NoError(t, err)
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("async")}).Result(ctx)
	require.NoError(t, err)
	bodies := storedBodies(t, e, "t")
	assert.True(t, bodies["sync"] && bodies["async"], "%v", bodies)
	assert.Equal(t, int64(2), unary.Load())

	// Once the hog's calls end, the client sends on a stream again.
	hcancel()
	eventually(t, 30*time.Second, func() bool {
		before := unary.Load()
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("again")})
		require.NoError(t, err)
		return unary.Load() == before
	}, "the client sends with unary calls for good")
}

// A negative MaxAppendStreams is refused.
func TestAppendStream_MaxAppendStreamsNegative(t *testing.T) {
	_, err := remote.NewServer(openEngine(t, nil), &remote.ServerOptions{MaxAppendStreams: -1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

// serveCountingAppends serves e with MaxAppendStreams limit through a gRPC
// server of the test's own that counts the unary Append calls it gets.
func serveCountingAppends(t *testing.T, e *equeue.Engine, limit int) (*remote.Server, string, *atomic.Int64) {
	t.Helper()
	srv, err := remote.NewServer(e, &remote.ServerOptions{MaxAppendStreams: limit})
	require.NoError(t, err)
	unary := new(atomic.Int64)
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == pb.Broker_Append_FullMethodName {
			unary.Add(1)
		}
		return h(ctx, req)
	}))
	srv.Register(gs)
	return srv, serveOwn(t, srv, gs), unary
}
