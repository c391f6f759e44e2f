package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestAuth_TokensAreFixedWhenTheServerIsMade: the server copies
// ServerOptions.Tokens when it is made and never reads the map again, so
// there is nothing to reload or revoke while it serves: a token taken out
// of the map afterwards still works, on new calls and on an append stream
// it opened, and one put in is unknown. Revoking a token takes a new
// server (serve: a restart without its --token), which ends its calls and
// streams.
func TestAuth_TokensAreFixedWhenTheServerIsMade(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	tokens := map[string]remote.Rights{"old": remote.RightProduce}
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: tokens})
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	as := func(token string) context.Context {
		ctx, cancel := context.WithTimeout(ctxT(t), 10*time.Second)
		t.Cleanup(cancel)
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	one := func(seq uint64) *pb.AppendStreamRequest {
		return &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: seq, Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("x")}}}}}}
	}
	st, err := conn.NewStream(as("old"), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, pb.Broker_AppendStream_FullMethodName)
	require.NoError(t, err)
	answer := func(seq uint64) {
		t.Helper()
		require.NoError(t, st.SendMsg(one(seq)))
		resp := new(pb.AppendStreamResponse)
		require.NoError(t, st.RecvMsg(resp))
		require.Len(t, resp.GetResults(), 1)
		assert.Equal(t, seq, resp.GetResults()[0].GetSeq())
		assert.Nil(t, resp.GetResults()[0].GetError(), "append %d on the stream", seq)
	}
	answer(1)

	delete(tokens, "old")
	tokens["new"] = remote.RightAll
	answer(2)
	require.NoError(t, st.CloseSend())
	_, err = pb.NewBrokerClient(conn).Append(as("old"), one(3).GetAppends()[0].GetAppend())
	assert.NoError(t, err, "a token taken out of the map afterwards")
	_, err = pb.NewBrokerClient(conn).Append(as("new"), one(4).GetAppends()[0].GetAppend())
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "a token put in the map afterwards: %v", err)
	ti, err := e.Topic(ctxT(t), "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), ti.Queues[0].MaxOffset)
}
