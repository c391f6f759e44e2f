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
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
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
	assertMalformedAnswered(t, s.addr, codes.InvalidArgument)
}

// malformedBytes decode as no request of any method.
var malformedBytes = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}

// assertMalformedAnswered sends every Broker method of the server at addr
// malformedBytes, unary and streamed, and checks each is answered want
// (with InvalidArgument, naming the request as malformed), and that the
// connection serves on.
func assertMalformedAnswered(t *testing.T, addr string, want codes.Code) {
	t.Helper()
	conn := bytesConn(t, addr)
	assertMalformedOnService(t, conn, &pb.Broker_ServiceDesc, want)
	// The server serves on, on the same connection.
	var out []byte
	require.NoError(t, conn.Invoke(ctxT(t), pb.Broker_ListTopics_FullMethodName, []byte{}, &out))
}

// assertMalformedOnService sends every method of d, unary and streamed,
// malformedBytes on conn (whose codec sends bytes as they are) and checks
// each answer has code want.
func assertMalformedOnService(t *testing.T, conn *grpc.ClientConn, d *grpc.ServiceDesc, want codes.Code) {
	t.Helper()
	for _, m := range d.Methods {
		full := "/" + d.ServiceName + "/" + m.MethodName
		var out []byte
		err := conn.Invoke(ctxT(t), full, malformedBytes, &out)
		assertMalformedAnswer(t, want, err, full)
	}
	for i, sd := range d.Streams {
		full := "/" + d.ServiceName + "/" + sd.StreamName
		err := sendMalformedOnStream(t, conn, &d.Streams[i], full)
		assertMalformedAnswer(t, want, err, full)
	}
}

// bytesConn is a connection to addr whose calls send and receive bytes as
// they are.
func bytesConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawBytesCodec{})))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// sendMalformedOnStream opens the stream sd (full) on conn, sends
// malformedBytes and returns the error that ends the stream.
func sendMalformedOnStream(t *testing.T, conn *grpc.ClientConn, sd *grpc.StreamDesc, full string) error {
	t.Helper()
	st, err := conn.NewStream(ctxT(t), sd, full)
	require.NoError(t, err)
	require.NoError(t, st.SendMsg(malformedBytes))
	var out []byte
	for err == nil {
		err = st.RecvMsg(&out)
	}
	require.False(t, errors.Is(err, io.EOF), "%s ended without an error", full)
	return err
}

// assertMalformedAnswer checks that err, the answer of call what to
// malformedBytes, has code want, and names the request malformed when
// that is InvalidArgument.
func assertMalformedAnswer(t *testing.T, want codes.Code, err error, what string) {
	t.Helper()
	assert.Equal(t, want, status.Code(err), "%s: %v", what, err)
	if want == codes.InvalidArgument {
		assert.ErrorContains(t, err, "malformed request", what)
	}
}

// The health and reflection services of the server's own gRPC server
// answer a request that does not decode as the Broker service does:
// InvalidArgument, naming it malformed (before, gRPC answered Internal,
// a fault of the server's as far as a client can tell). Every method of
// each is sent one, unary and streamed, health's Watch and both versions
// of reflection included.
func TestServer_HealthAndReflectionAnswerMalformedAsInvalidArgument(t *testing.T) {
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	conn := bytesConn(t, s.addr)
	for _, d := range []*grpc.ServiceDesc{&healthpb.Health_ServiceDesc, &reflectionv1.ServerReflection_ServiceDesc,
		&reflectionv1alpha.ServerReflection_ServiceDesc} {
		assertMalformedOnService(t, conn, d, codes.InvalidArgument)
	}
	// They serve on, on the same connection.
	var out []byte
	require.NoError(t, conn.Invoke(ctxT(t), healthpb.Health_Check_FullMethodName, []byte{}, &out))
}
