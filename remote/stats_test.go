package remote_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// The engine's counters and store size read over the wire match the
// engine's own, and need the admin right.
func TestClient_EngineStatsMatchesTheEngine(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, 4096)}}})
	require.NoError(t, err)
	got, err := c.EngineStats(ctx)
	require.NoError(t, err)
	want := e.Stats()
	assert.Positive(t, got.StoreBytes)
	assert.Equal(t, want, got)

	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"r": remote.RightConsume}})
	rc := dial(t, s.addr, &remote.ClientOptions{Token: "r"})
	_, err = rc.EngineStats(ctx)
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
}
