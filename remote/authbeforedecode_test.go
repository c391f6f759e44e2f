package remote_test

import (
	"fmt"
	"testing"

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

// rawBytesCodec sends a []byte request as it is and reads any answer into
// a *[]byte, for requests no protobuf encoder would make.
type rawBytesCodec struct{}

func (rawBytesCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawBytesCodec: %T", v)
	}
	return b, nil
}

func (rawBytesCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}

func (rawBytesCodec) Name() string { return "proto" }

// A call without a known token is refused as Unauthenticated before its
// request is decoded: a malformed request from an unknown caller is
// Unauthenticated, so the server neither decodes megabytes for a caller it
// refuses nor tells it how its bytes parse. With a known token the same
// bytes are refused as they cannot be decoded (InvalidArgument, see
// TestServer_MalformedRequestIsInvalidArgument).
func TestAuth_UnauthenticatedCallIsRefusedBeforeItsRequestIsDecoded(t *testing.T) {
	e := openEngine(t, nil)
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"tok": remote.RightAll}})
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawBytesCodec{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	for _, m := range pb.Broker_ServiceDesc.Methods {
		full := "/" + pb.Broker_ServiceDesc.ServiceName + "/" + m.MethodName
		var out []byte
		err := conn.Invoke(ctxT(t), full, garbage, &out)
		assert.Equal(t, codes.Unauthenticated, status.Code(err), "%s without a token: %v", m.MethodName, err)
		authed := metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer tok")
		err = conn.Invoke(authed, full, garbage, &out)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s with a token: %v", m.MethodName, err)
		assert.ErrorContains(t, err, "malformed request", "%s with a token", m.MethodName)
	}
}
