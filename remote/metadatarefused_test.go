package remote_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A call whose metadata is over the broker's MaxMetadataBytes is refused
// by the client's gRPC transport itself, before the call leaves it: the
// broker told the bound in its first SETTINGS frame, and gRPC answers
// Internal "header list size to send violates the maximum size (N bytes)
// set by server". Nothing was done, so the error is a definite refusal
// (equeue.ErrInvalidArgument, the call's own input being at fault), never
// ErrIndeterminate, for changes, sends (on the stream and as unary calls)
// and reads alike; before, it matched no sentinel at all, and a caller
// could not tell it from a broker's failure of unknown outcome.
func TestClient_OversizedMetadataIsADefiniteRefusal(t *testing.T) {
	for _, path := range []string{"stream", "unary"} {
		t.Run(path, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			srv, err := remote.NewServer(e, &remote.ServerOptions{MaxMetadataBytes: 4 << 10})
			require.NoError(t, err)
			gs := grpc.NewServer(srv.GRPCServerOptions()...)
			if path == "stream" {
				srv.Register(gs)
			} else {
				remote.RegisterWithoutStreams(srv, gs)
			}
			addr := serveOwn(t, srv, gs)
			big := strings.Repeat("t", 8<<10)
			assertRefused := func(what string, err error) {
				t.Helper()
				require.Error(t, err, what)
				assert.Contains(t, err.Error(), "header list size", what)
				assert.Equal(t, codes.Internal, grpcCode(err), what)
				assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s: %v", what, err)
				assert.ErrorIs(t, err, remote.ErrMetadataTooLarge, "%s: %v", what, err)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "%s: %v", what, err)
				assert.NotErrorIs(t, err, remote.ErrUnavailable, "%s: %v", what, err)
			}

			// A token over the bound: every call carries it.
			c := dial(t, addr, &remote.ClientOptions{Token: big})
			_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
			assertRefused("append, token", err)
			assertRefused("create topic, token", c.CreateTopic(ctx, "u", 1))
			_, err = c.SendBack(ctx, &equeue.SendBackRequest{Group: "g"})
			assertRefused("send back, token", err)
			_, err = c.Topics(ctx)
			assertRefused("topics, token", err)

			// Metadata of the caller's own, on the call's context.
			c2 := dial(t, addr, nil)
			padded := metadata.AppendToOutgoingContext(ctx, "x-pad", big)
			assertRefused("create topic, metadata", c2.CreateTopic(padded, "u", 1))
			assertRefused("delete topic, metadata", c2.DeleteTopic(padded, "t"))
			_, err = c2.Redrive(padded, "g", equeue.RedriveRequest{})
			assertRefused("redrive, metadata", err)

			_, err = e.Topic(ctx, "u")
			require.ErrorIs(t, err, equeue.ErrTopicNotFound, "nothing was done")
			_, err = e.Topic(ctx, "t")
			require.NoError(t, err, "nothing was done")
			// The connection serves on.
			require.NoError(t, c2.CreateTopic(ctx, "u", 1))
		})
	}
}

// grpcCode is the gRPC code of err, which the client gives as a *remote.Error.
func grpcCode(err error) codes.Code {
	var re *remote.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return codes.Unknown
}
