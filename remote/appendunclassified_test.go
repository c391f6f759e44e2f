package remote_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// storedThenFailedBackend is an engine whose appends, in-process as on its
// fast path, store the messages and then fail with an error the broker
// cannot classify (answered Internal): a wrapper that lost its answer
// after the write, say.
type storedThenFailedBackend struct {
	*equeue.Engine
	text string
}

func (b *storedThenFailedBackend) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if _, err := b.Engine.Append(ctx, req); err != nil {
		return equeue.AppendResult{}, err
	}
	return equeue.AppendResult{}, errors.New(b.text)
}

func (b *storedThenFailedBackend) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cb(b.Append(ctx, req))
}

func (b *storedThenFailedBackend) FastPathOwner() any { return b }

// An append the broker answers Internal without an engine error (a
// failure it could not classify) may be stored: it is ErrIndeterminate on
// the append stream as it is as a unary call, also when the answer's text
// is that of gRPC's client-side refusal of oversized headers. Before, an
// append answered so on the stream got the answer alone, which matches no
// sentinel, and a caller took it as not stored.
func TestClient_AppendAnsweredInternalIsIndeterminateOnTheStreamToo(t *testing.T) {
	for _, path := range []string{"stream", "unary"} {
		for name, text := range map[string]string{"unclassified": "backend: answer lost after the write", "headers text": forgedHeadersText} {
			t.Run(path+"/"+name, func(t *testing.T) {
				ctx := ctxT(t)
				e := openEngine(t, nil)
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				srv, err := remote.NewBackendServer(&storedThenFailedBackend{Engine: e, text: text}, nil)
				require.NoError(t, err)
				gs := grpc.NewServer(srv.GRPCServerOptions()...)
				if path == "stream" {
					srv.Register(gs)
				} else {
					remote.RegisterWithoutStreams(srv, gs)
				}
				c := dial(t, serveOwn(t, srv, gs), nil)

				_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
				require.Error(t, err)
				assert.ErrorIs(t, err, equeue.ErrIndeterminate, "append: %v", err)
				assert.NotErrorIs(t, err, equeue.ErrInvalidArgument, "append: %v", err)
				done := make(chan error, 1)
				c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}},
					func(_ equeue.AppendResult, err error) { done <- err })
				err = <-done
				require.Error(t, err)
				assert.ErrorIs(t, err, equeue.ErrIndeterminate, "append async: %v", err)
				assert.NotErrorIs(t, err, equeue.ErrInvalidArgument, "append async: %v", err)

				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
				require.NoError(t, err)
				assert.Len(t, res.Messages, 2, "both appends were stored")
			})
		}
	}
}
