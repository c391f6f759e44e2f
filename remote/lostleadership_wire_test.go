package remote_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// lostLeadershipErr is a cluster leader's answer to a write in flight
// when it lost its leadership: the write may be stored (ErrIndeterminate),
// and the node is no longer the leader, naming the new one (ErrNotLeader).
type lostLeadershipErr struct{ leader string }

func (e lostLeadershipErr) Error() string  { return "lost leadership with the write in flight" }
func (e lostLeadershipErr) Leader() string { return e.leader }
func (e lostLeadershipErr) Unwrap() []error {
	return []error{equeue.ErrNotLeader, equeue.ErrIndeterminate}
}

// lostLeadershipBackend stores every append, then answers it as a leader
// that lost its leadership during the write does, on the unary path and
// on the append stream's.
type lostLeadershipBackend struct {
	*equeue.Engine
}

func (b *lostLeadershipBackend) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if _, err := b.Engine.Append(ctx, req); err != nil {
		return equeue.AppendResult{}, err
	}
	return equeue.AppendResult{}, lostLeadershipErr{leader: "new-leader.invalid:7000"}
}

func (b *lostLeadershipBackend) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cb(b.Append(ctx, req))
}

func (b *lostLeadershipBackend) FastPathOwner() any { return b }

// An error matching both equeue.ErrIndeterminate and equeue.ErrNotLeader
// (a leader losing its leadership with a write in flight) was sent as
// codes.Unavailable, since NOT_LEADER comes first among the sentinels: a
// gRPC client reading only the code (not this package's, or a retry
// policy) takes Unavailable as "not done, safe to retry" and sends the
// write again, while it may be stored. Its code is now Unknown, as a lone
// ErrIndeterminate's, on the unary call and on the append stream's item,
// and the details still name NOT_LEADER and the new leader, so that an
// equeue client finds it.
func TestServer_LostLeadershipWithAWriteInFlightIsUnknownOnTheWire(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewBackendServer(&lostLeadershipBackend{Engine: e}, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")

	// A generic gRPC client: the generated stub alone.
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	api := pb.NewBrokerClient(conn)
	in := &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("raw")}}}

	_, err = api.Append(ctx, in)
	require.Error(t, err)
	st := status.Convert(err)
	assert.Equal(t, codes.Unknown, st.Code(), "unary: %v", err)
	info := errorInfo(st)
	require.NotNil(t, info, "unary: no ErrorInfo in %v", err)
	assert.Contains(t, info.GetMetadata()["reasons"], "NOT_LEADER")
	assert.Contains(t, info.GetMetadata()["reasons"], "INDETERMINATE")
	assert.Equal(t, "new-leader.invalid:7000", info.GetMetadata()["leader"])

	stream, err := api.AppendStream(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: 1, Append: in}}}))
	var item *pb.StreamAppendResult
	for item == nil {
		resp, err := stream.Recv()
		require.NoError(t, err)
		if len(resp.GetResults()) > 0 {
			item = resp.GetResults()[0]
		}
	}
	require.NoError(t, stream.CloseSend())
	require.NotNil(t, item.GetError(), "stream: answered %v", item)
	assert.Equal(t, uint32(codes.Unknown), item.GetError().GetCode(), "stream: %v", item.GetError())
	assert.Contains(t, item.GetError().GetReasons(), "NOT_LEADER")
	assert.Equal(t, "new-leader.invalid:7000", item.GetError().GetMetadata()["leader"])

	// This package's client still reads both, and the leader.
	c := dial(t, s.addr, nil)
	for _, path := range []string{"stream", "unary"} {
		var err error
		if path == "stream" {
			_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("s")}}})
		} else {
			// Outgoing metadata sends it as a unary call.
			_, err = c.Append(withTrace(ctx), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("u")}}})
		}
		require.Error(t, err, path)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", path, err)
		assert.ErrorIs(t, err, equeue.ErrNotLeader, "%s: %v", path, err)
		var re *remote.Error
		require.True(t, errors.As(err, &re), "%s: %v", path, err)
		assert.Equal(t, "new-leader.invalid:7000", re.Leader, path)
		assert.Equal(t, codes.Unknown, re.Code, path)
	}
}

// errorInfo is st's ErrorInfo detail of this package's domain, or nil.
func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == "equeue" {
			return info
		}
	}
	return nil
}

// withTrace is ctx with outgoing metadata of the caller's: an append on
// it goes as a unary call.
func withTrace(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-trace", "t")
}
