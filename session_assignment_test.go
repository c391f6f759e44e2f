package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestGroup_AssignmentCarriesTheSessionTimeout: the answers to a join and
// to a heartbeat tell the member the session timeout the engine applies
// to it, in process, over remote and through a cluster node, so that a
// member can keep its own lease on its membership below it; and the
// engine's MaxPullWait, so that a client over the network bounds its
// long-polls by it.
func TestGroup_AssignmentCarriesTheSessionTimeout(t *testing.T) {
	forTransports(t, testGroupAssignmentCarriesTheSessionTimeout)
}

func testGroupAssignmentCarriesTheSessionTimeout(t *testing.T, tr string) {
	ctx := ctxT(t)
	const session, pullWait = 7 * time.Second, 3 * time.Second
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: session, MaxPullWait: pullWait})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	join := &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}}
	a, err := b.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Equal(t, session, a.SessionTimeout, "join")
	require.Equal(t, pullWait, a.MaxPullWait, "join")
	a, err = b.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
	require.NoError(t, err)
	require.Equal(t, session, a.SessionTimeout, "heartbeat")
	require.Equal(t, pullWait, a.MaxPullWait, "heartbeat")
}
