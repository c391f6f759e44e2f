package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestClient_NilMessageInAnAppendIsRefusedAsInProcess appends a request
// holding a nil message, among others, with Append and AppendAsync, over
// the client's AppendStream, over unary calls (a server without it) and
// through a ClusterClient: each is refused with ErrInvalidArgument before
// it is sent, as the engine refuses it in process, and nothing is stored.
// Before, the client dereferenced the nil message and panicked.
func TestClient_NilMessageInAnAppendIsRefusedAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "warm", 1))
	req := func() *equeue.AppendRequest {
		return &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}, nil, {Body: []byte("b")}}}
	}
	_, err := e.Append(ctx, req())
	require.ErrorIs(t, err, equeue.ErrInvalidArgument, "in process")

	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(srv.GRPCServerOptions()...)
	remote.RegisterWithoutStreams(srv, gs) // an older server: unary Append calls
	addr := startServer(t, e, "", nil).addr
	cc, err := remote.DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	clients := map[string]appender{
		"stream":  dial(t, addr, nil),
		"unary":   dial(t, serveOwn(t, srv, gs), nil),
		"cluster": cc,
	}
	for name, c := range clients {
		t.Run(name, func(t *testing.T) {
			// A first append finds out whether the server has streams.
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "warm", Messages: []*equeue.Message{{Body: []byte("w")}}})
			require.NoError(t, err)
			_, err = c.Append(ctx, req())
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "Append")
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "Append")
			done := make(chan error, 1)
			c.AppendAsync(ctx, req(), func(_ equeue.AppendResult, err error) { done <- err })
			err = <-done
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "AppendAsync")
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "AppendAsync")
		})
	}
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Zero(t, ti.Messages, "nothing stored")
}

// appender is a remote client's append API, a ClusterClient's too.
type appender interface {
	Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error)
	AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error))
}
