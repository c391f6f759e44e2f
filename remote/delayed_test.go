package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func TestClient_DelayedMatchesTheEngine(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	defer p.Close()
	for i := range 3 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte("x"), DeliverAt: at.Add(time.Duration(i) * time.Minute)})
		require.NoError(t, err)
	}
	want, err := e.Delayed(ctx, 2)
	require.NoError(t, err)
	got, err := c.Delayed(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Pending)
	assert.True(t, got.Complete)
	require.Len(t, got.Next, 2)
	for i := range want.Next {
		assert.True(t, want.Next[i].DeliverAt.Equal(got.Next[i].DeliverAt))
		assert.Equal(t, want.Next[i].QueueRef, got.Next[i].QueueRef)
	}
	_, err = c.Delayed(ctx, 5000)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)

	// An admin read: a consume-only token may not.
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"r": remote.RightConsume}})
	rc := dial(t, s.addr, &remote.ClientOptions{Token: "r"})
	_, err = rc.Delayed(ctx, 1)
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
}
