package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_MemberPullCappedOnceTheCapIsTold: a group member's
// long-poll of an hour, with a context without a deadline, begun before
// any answer told the client the engine's MaxPullWait (a client that
// just connected, or reconnected: the cap is forgotten then), is
// answered with nothing at the cap once a join or heartbeat answer told
// it. Before, the shared call went on asking for it until its own hour
// ended.
func TestClient_MemberPullCappedOnceTheCapIsTold(t *testing.T) {
	e, c := setup(t, &equeue.Options{MaxPullWait: 200 * time.Millisecond})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	// Joined in process: the client has been told no cap.
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Incarnation: "i1"})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	g := a.Queues[0]

	type pulled struct {
		res equeue.PullResult
		err error
	}
	done := make(chan pulled, 1)
	go func() {
		res, err := c.Pull(context.Background(), &equeue.PullRequest{Topic: "t", Queue: g.Queue, Max: 10, Wait: time.Hour,
			Group: "g", Member: "m1", Epoch: g.Epoch})
		done <- pulled{res, err}
	}()
	// The member's heartbeat over the client tells it the cap, while the
	// pull waits (or before it is sent: either way it is told by then).
	_, err = c.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m1", KnownVersion: a.Version, Incarnation: "i1"})
	require.NoError(t, err)
	select {
	case p := <-done:
		require.NoError(t, p.err)
		assert.Empty(t, p.res.Messages)
	case <-time.After(30 * time.Second):
		t.Fatal("a member's pull of an hour was not answered at the engine's MaxPullWait once the client was told it")
	}
}
