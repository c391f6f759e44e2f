package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A producer idle while its server restarts (a new server on the same
// engine and address) sends its next message once the client has seen the
// old connection go: its append stream ended before the message was
// written, so the message goes on a new stream. It is never reported
// unknown: at worst, when the new stream cannot open yet, it fails as not
// stored (ErrUnavailable), and the next send goes through.
func TestAppendStream_IdleBreakSendsOnANewStream(t *testing.T) {
	for _, stop := range []struct {
		name string
		stop func(*remote.Server)
	}{
		{"Stop", (*remote.Server).Stop},
		{"GracefulStop", (*remote.Server).GracefulStop},
	} {
		t.Run(stop.name, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			s1 := startServer(t, e, "", nil)
			c := dial(t, s1.addr, nil)
			p := newProducer(t, c)
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("before")})
			require.NoError(t, err)

			stop.stop(s1.srv)
			s1.stop() // waits for Serve to return
			s2 := startServer(t, e, s1.addr, nil)
			defer s2.stop()
			// Nothing connects again before a call does. CONNECTING is no
			// sign the connection went: under load the state can still say
			// so from the first connect (gRPC lets calls use a connection
			// before its state says ready), while the client has not yet
			// seen the server go; a send then may be written on the old
			// stream, and be unknown. IDLE and TRANSIENT_FAILURE are.
			eventually(t, 30*time.Second, func() bool {
				s := remote.ClientState(c)
				return s == connectivity.Idle || s == connectivity.TransientFailure
			}, "the client never saw the old connection go")

			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("after")})
			if err != nil {
				require.NotErrorIs(t, err, equeue.ErrIndeterminate, "the message was never written to the old stream")
				require.ErrorIs(t, err, remote.ErrUnavailable)
			}
			res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("next")}).Result(ctx)
			require.NoError(t, err)
			stored := storedBodies(t, e, "t")
			assert.Len(t, stored, int(res.Offset)+1)
			assert.True(t, stored["before"] && stored["next"])
		})
	}
}
