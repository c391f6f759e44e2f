package remote_test

import (
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// resettingProxy serves gRPC over unencrypted HTTP/2 as a proxy in front
// of a broker without AppendStream would, but resets the stream of every
// unary Append (RST_STREAM INTERNAL_ERROR) once it has stored it in e:
// the request reached the broker and its answer was lost on the way.
func resettingProxy(t *testing.T, e *equeue.Engine) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		// Any other method, AppendStream included: the broker has none.
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "12") // Unimplemented
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/"+pb.Broker_ServiceDesc.ServiceName+"/Append", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || len(body) < 5 || int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
			panic(http.ErrAbortHandler)
		}
		var in pb.AppendRequest
		if proto.Unmarshal(body[5:], &in) == nil && len(in.GetMessages()) > 0 {
			_, _ = e.Append(r.Context(), &equeue.AppendRequest{Topic: in.GetTopic(),
				Messages: []*equeue.Message{{Body: in.GetMessages()[0].GetBody()}}})
		}
		panic(http.ErrAbortHandler) // RST_STREAM, INTERNAL_ERROR
	})
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux, Protocols: &protocols}
	lis := testport.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-served
	})
	return lis.Addr().String()
}

// A unary Append whose stream a proxy reset after it passed the request on
// (gRPC reports RST_STREAM as Internal, with no answer of the broker's)
// was reported as the broker's refusal, so not stored, though it was
// stored: its outcome is unknown.
func TestAppend_UnaryStreamResetIsIndeterminate(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c := dial(t, resettingProxy(t, e), nil)
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.Error(t, err)
	require.True(t, storedBodies(t, e, "t")["x"], "the proxy passed the append on: it is stored")
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "a stored append was reported as not stored: %v", err)
}
