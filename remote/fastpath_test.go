package remote_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// guardedBackend embeds the engine and overrides Append and Pull, as a
// program that checks or filters what its server serves would: it refuses
// a message whose body is "forbidden" and hides those whose body is
// "hidden". It inherits the engine's AppendAsync and PullStored too.
type guardedBackend struct {
	*equeue.Engine
	appends, pulls atomic.Int32
}

var errForbidden = errors.New("forbidden by the backend")

func (g *guardedBackend) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	g.appends.Add(1)
	for _, m := range req.Messages {
		if string(m.Body) == "forbidden" {
			return equeue.AppendResult{}, errForbidden
		}
	}
	return g.Engine.Append(ctx, req)
}

func (g *guardedBackend) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	g.pulls.Add(1)
	res, err := g.Engine.Pull(ctx, req)
	kept := res.Messages[:0]
	for _, m := range res.Messages {
		if string(m.Body) != "hidden" {
			kept = append(kept, m)
		}
	}
	res.Messages = kept
	return res, err
}

// The server's fast paths (the append stream's AppendAsync, the stored
// batches' PullStored) stand in for a backend's Append and Pull only when
// the backend owns them: a backend that embeds the engine and overrides
// Append and Pull gets its overrides called for a remote SendAsync and a
// remote pull. Before, both went around them: the forbidden message was
// stored and the hidden one served.
func TestServer_UsesABackendsOwnAppendAndPull(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	g := &guardedBackend{Engine: e}
	require.False(t, equeue.OwnsFastPaths(g))
	srv, err := remote.NewBackendServer(g, nil)
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "127.0.0.1:0").addr, nil)
	p := newProducer(t, c)

	// SendAsync travels the append stream.
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("forbidden")}).Result(ctx)
	require.Error(t, err, "the backend's Append refuses it")
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("visible")}).Result(ctx)
	require.NoError(t, err)
	require.Equal(t, int32(2), g.appends.Load(), "both sends went through the backend's Append")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(1), info.Queues[0].MaxOffset, "the forbidden message was not stored")

	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("hidden")}}})
	require.NoError(t, err)
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Positive(t, g.pulls.Load(), "the pull went through the backend's Pull")
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	require.Equal(t, []string{"visible"}, bodies)
}
