package remote_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestServer_MalformedRequestIsInvalidArgument sends every Broker method,
// unary and streamed, bytes that decode as no request: the server answers
// InvalidArgument, naming the request as malformed, where gRPC's own
// answer to a request its codec cannot decode is Internal (a fault of the
// server's, as far as a client can tell). The connection serves on.
func TestServer_MalformedRequestIsInvalidArgument(t *testing.T) {
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawBytesCodec{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	garbage := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	for _, m := range pb.Broker_ServiceDesc.Methods {
		full := "/" + pb.Broker_ServiceDesc.ServiceName + "/" + m.MethodName
		var out []byte
		err := conn.Invoke(ctxT(t), full, garbage, &out)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", m.MethodName, err)
		assert.ErrorContains(t, err, "malformed request", m.MethodName)
	}
	for i, sd := range pb.Broker_ServiceDesc.Streams {
		full := "/" + pb.Broker_ServiceDesc.ServiceName + "/" + sd.StreamName
		st, err := conn.NewStream(ctxT(t), &pb.Broker_ServiceDesc.Streams[i], full)
		require.NoError(t, err)
		require.NoError(t, st.SendMsg(garbage))
		var out []byte
		for err == nil {
			err = st.RecvMsg(&out)
		}
		require.False(t, errors.Is(err, io.EOF), "%s ended without an error", sd.StreamName)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", sd.StreamName, err)
		assert.ErrorContains(t, err, "malformed request", sd.StreamName)
	}
	// The server serves on, on the same connection.
	var out []byte
	require.NoError(t, conn.Invoke(ctxT(t), pb.Broker_ListTopics_FullMethodName, []byte{}, &out))
}
