package remote_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// An append to a broker without AppendStream (unary Append calls) that the
// broker took before the call ended, by the caller's context or a lost
// connection, may be stored: its outcome is unknown (ErrIndeterminate, as
// on the stream), never the plain "not stored" of the context's error or
// ErrUnavailable.
func TestAppendStream_UnaryFallbackReportsUnknownOutcomes(t *testing.T) {
	for _, end := range []string{"context", "connection"} {
		t.Run(end, func(t *testing.T) {
			ctx := ctxT(t)
			gst, e := gatedEngine(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			srv, err := remote.NewServer(e, nil)
			require.NoError(t, err)
			gs := grpc.NewServer()
			remote.RegisterWithoutStreams(srv, gs) // an older server
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			served := make(chan error, 1)
			go func() { served <- gs.Serve(lis) }()
			stopped := false
			stop := func() {
				if !stopped {
					stopped = true
					srv.Stop()
					gs.Stop()
					<-served
				}
			}
			t.Cleanup(stop)
			p := newProducer(t, dial(t, lis.Addr().String(), nil))
			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("warm")})
			require.NoError(t, err)

			gst.hold()
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			sent := make(chan error, 1)
			go func() {
				_, err := p.Send(sctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				sent <- err
			}()
			eventually(t, 10*time.Second, func() bool { return gst.waiting.Load() > 0 }, "the send never reached the store")
			if end == "context" {
				cancel()
			} else {
				stop()
			}
			err = <-sent
			gst.release()
			require.Error(t, err)
			eventually(t, 10*time.Second, func() bool { return storedBodies(t, e, "t")["x"] }, "the broker took the send: it is stored")
			assert.ErrorIs(t, err, equeue.ErrIndeterminate, "a stored send was reported as not stored: %v", err)
			if end == "context" {
				assert.ErrorIs(t, err, context.Canceled)
			}
		})
	}
}
