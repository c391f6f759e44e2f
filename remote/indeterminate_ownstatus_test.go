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

// relayedUnknownErr is an error of unknown outcome that carries a gRPC
// status of its own saying Unavailable: a backend relaying another
// broker's answer (an older server sent a lost leadership so).
type relayedUnknownErr struct{}

func (relayedUnknownErr) Error() string { return "relayed: outcome unknown" }
func (relayedUnknownErr) Unwrap() error { return equeue.ErrIndeterminate }
func (relayedUnknownErr) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, "relayed: outcome unknown")
}

// relayedUnknownBackend stores every append, then fails it with
// relayedUnknownErr.
type relayedUnknownBackend struct{ *equeue.Engine }

func (b *relayedUnknownBackend) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if _, err := b.Engine.Append(ctx, req); err != nil {
		return equeue.AppendResult{}, err
	}
	return equeue.AppendResult{}, relayedUnknownErr{}
}

// Every error matching equeue.ErrIndeterminate is Unknown on the wire, as
// the README says, but one with a gRPC status of its own went with that
// status's code: Unavailable, which a generic client retries.
func TestServer_UnknownOutcomeWithAStatusOfItsOwnIsUnknownOnTheWire(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewBackendServer(&relayedUnknownBackend{Engine: e}, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = pb.NewBrokerClient(conn).Append(ctx, &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("raw")}}})
	require.Error(t, err)
	assert.Equal(t, codes.Unknown, status.Code(err), "%v", err)

	c := dial(t, s.addr, nil)
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("s")}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%v", err)
}
