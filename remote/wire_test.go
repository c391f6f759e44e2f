package remote_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// wireMessages are messages with every field a send carries.
func wireMessages() []*equeue.Message {
	return []*equeue.Message{
		{Topic: "t", Tag: "eu", Keys: []string{"k1", "k2"}, Properties: map[string]string{"a": "1", "b": ""}, Body: []byte("one"),
			BornAt: time.Unix(1_700_000_000, 5)},
		{Topic: "t", Body: []byte("two"), TTL: time.Hour},
		{Topic: "t"},
	}
}

// checkRoundTrip pulls what was sent to t and compares it field by field.
func checkRoundTrip(t *testing.T, br equeue.Broker, sent []*equeue.Message, ids []string) {
	ctx := ctxT(t)
	res, err := br.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, len(sent))
	for i, m := range res.Messages {
		assert.Equal(t, ids[i], m.ID)
		assert.Equal(t, sent[i].Tag, m.Tag)
		assert.Equal(t, sent[i].Keys, m.Keys)
		assert.Equal(t, sent[i].Properties, m.Properties)
		assert.Equal(t, sent[i].Body, m.Body)
		assert.Equal(t, int64(i), m.Offset)
		if !sent[i].BornAt.IsZero() {
			assert.True(t, sent[i].BornAt.Equal(m.BornAt))
		}
		assert.Equal(t, sent[i].TTL != 0, !m.ExpiresAt.IsZero())
	}
}

// The client encodes, and the broker decodes, appends and pull answers
// themselves; what a client sends, another reads back as sent.
func TestWire_RoundTrip(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	sent := wireMessages()
	res, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent[:2]})
	require.NoError(t, err)
	ids := res.IDs
	done := make(chan equeue.AppendResult, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent[2:]}, func(r equeue.AppendResult, err error) {
		assert.NoError(t, err)
		done <- r
	})
	ids = append(ids, (<-done).IDs...)
	checkRoundTrip(t, c, sent, ids)
	checkRoundTrip(t, e, sent, ids)
}

// On a gRPC server of the application's, with its own interceptor, the
// Broker service decodes unary appends with protobuf: the interceptor gets
// the whole request. (Clients send Append on the AppendStream call where
// the broker has one; this server has none, as an older version, so the
// client falls back to unary calls.)
func TestWire_ApplicationServerSeesWholeAppend(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	var seen atomic.Int64
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*pb.AppendRequest); ok {
			seen.Store(int64(len(r.GetMessages())))
		}
		return h(ctx, req)
	}))
	remote.RegisterWithoutStreams(srv, gs)
	c := dial(t, serveOwn(t, srv, gs), nil)
	sent := wireMessages()
	res, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent})
	require.NoError(t, err)
	assert.Equal(t, int64(len(sent)), seen.Load())
	checkRoundTrip(t, c, sent, res.IDs)
}

// On a gRPC server of the application's without interceptors, whose codec
// is protobuf's, the broker's own answers (unary and pipelined appends,
// pulls) are sent as protobuf messages, and the client reads them as from
// the broker's own server.
func TestWire_PlainApplicationServer(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer()
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		gs.Stop()
		<-served
	})
	c := dial(t, lis.Addr().String(), nil)
	sent := wireMessages()
	res, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent[:2]})
	require.NoError(t, err)
	ids := res.IDs
	done := make(chan equeue.AppendResult, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: sent[2:]}, func(r equeue.AppendResult, err error) {
		assert.NoError(t, err)
		done <- r
	})
	ids = append(ids, (<-done).IDs...)
	checkRoundTrip(t, c, sent, ids)
}
