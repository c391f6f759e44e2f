package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestClient_HeartbeatDeadlineFollowsTheSession: a heartbeat call without
// a deadline of its own may take its wait plus 30 s, until the server's
// engine tells (in a join's or heartbeat's answer) a shorter session
// timeout: then its wait plus that session. A heartbeat that hangs longer
// comes too late (the engine has expired the member), so the member
// hears so, and rejoins, once the connection passes bytes again rather
// than up to 30 s later.
func TestClient_HeartbeatDeadlineFollowsTheSession(t *testing.T) {
	ctx := ctxT(t)
	const session = 300 * time.Millisecond
	e, c := setup(t, &equeue.Options{SessionTimeout: session})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.Equal(t, 30*time.Second, remote.HeartbeatSlack(c), "before any answer")
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Equal(t, session, a.SessionTimeout)
	require.Equal(t, session, remote.HeartbeatSlack(c), "after the join")
	a, err = c.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
	require.NoError(t, err)
	require.Equal(t, session, a.SessionTimeout)
}
