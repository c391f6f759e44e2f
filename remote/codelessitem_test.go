package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// okStatusErr is an error whose gRPC status says OK: a backend's own
// error type (one wrapping an answer of another gRPC service, say) with
// a GRPCStatus method.
type okStatusErr struct{}

func (okStatusErr) Error() string { return "answer lost after the write" }
func (okStatusErr) GRPCStatus() *status.Status {
	return status.New(codes.OK, "answer lost after the write")
}

// okStatusBackend stores every append, then fails it with okStatusErr.
type okStatusBackend struct {
	*equeue.Engine
}

func (b *okStatusBackend) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if _, err := b.Engine.Append(ctx, req); err != nil {
		return equeue.AppendResult{}, err
	}
	return equeue.AppendResult{}, okStatusErr{}
}

func (b *okStatusBackend) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cb(b.Append(ctx, req))
}

func (b *okStatusBackend) FastPathOwner() any { return b }

// A backend error whose gRPC status says OK went on the append stream as
// an error item without a code, after the append was stored, and the
// client took such an item for a refusal: "not stored". The server now
// never sends an item without a code (one it cannot classify is Unknown),
// and the client takes one from a server that does (an older version) as
// unknown: ErrIndeterminate, on the stream as on a unary call.
func TestServer_StoredAppendFailingWithAnOKStatusIsNeverCodeless(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewBackendServer(&okStatusBackend{Engine: e}, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")

	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	stream, err := pb.NewBrokerClient(conn).AppendStream(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: 1,
		Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("raw")}}}}}}))
	var item *pb.StreamAppendResult
	for item == nil {
		resp, err := stream.Recv()
		require.NoError(t, err)
		if len(resp.GetResults()) > 0 {
			item = resp.GetResults()[0]
		}
	}
	require.NoError(t, stream.CloseSend())
	require.NotNil(t, item.GetError(), "answered %v", item)
	assert.Equal(t, uint32(codes.Unknown), item.GetError().GetCode(), "the item of a stored append: %v", item.GetError())

	c := dial(t, s.addr, nil)
	for _, path := range []string{"stream", "unary"} {
		actx := ctx
		if path == "unary" {
			actx = withTrace(ctx)
		}
		_, err := c.Append(actx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(path)}}})
		require.Error(t, err, path)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", path, err)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 3, "every append was stored")
}
