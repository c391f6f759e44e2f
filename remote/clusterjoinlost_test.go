package remote_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A ClusterClient's join runs on several nodes in turn: the first one
// took it and its answer was lost (a connection broken after the broker
// ran it), the next refused it before its handler ran (a token it does
// not know). The join may have added a member on the first node: its
// error must not match equeue.ErrJoinRefused, which tells a Start that
// no member needs a leave. Before, it carried the last node's refusal
// mark, and the member the first attempt made was left behind.
func TestClusterClient_JoinRefusedAfterALostAttemptIsNoRefusal(t *testing.T) {
	ctx := ctxT(t)
	took := openEngine(t, nil)
	require.NoError(t, took.CreateTopic(ctx, "t", 1))
	lost := lostJoinServer(t, took)
	other := openEngine(t, nil)
	require.NoError(t, other.CreateTopic(ctx, "t", 1))
	refusing := startServer(t, other, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"another": remote.RightAll}})

	// No leader known: the first attempt goes to the first address, the
	// next to the second.
	cc, err := remote.DialCluster([]string{lost, refusing.addr}, &remote.ClientOptions{Token: "mine"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) })

	_, err = cc.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.ErrorIs(t, err, remote.ErrUnauthenticated, "the second node refused the join")
	gi, gerr := took.Group(ctx, "g")
	require.NoError(t, gerr)
	require.Len(t, gi.Members, 1, "the first node's join added the member")
	assert.NotErrorIs(t, err, equeue.ErrJoinRefused, "a member was added: no refusal (%v)", err)
}
