package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_FirstMemberPullOfAConnectionIsCapped: on a fresh client,
// which no join or heartbeat answer has told the engine's MaxPullWait, a
// group member's long-poll of a minute is answered with nothing once the
// broker's cap ended its wait, as in process, not asked again until its
// own minute (or its context) ends. Its context ends far past the cap but
// well before the minute: the pull returns before it, without error.
func TestClient_FirstMemberPullOfAConnectionIsCapped(t *testing.T) {
	e, c := setup(t, &equeue.Options{MaxPullWait: 200 * time.Millisecond})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	// Joined in process: the client has been told no cap.
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Incarnation: "i1"})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	g := a.Queues[0]

	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := c.Pull(pctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Max: 10, Wait: time.Minute,
		Group: "g", Member: "m1", Epoch: g.Epoch})
	require.NoError(t, err, "a member's first pull of a minute was not answered at the broker's MaxPullWait")
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)
	assert.Empty(t, res.Messages)
	assert.NoError(t, pctx.Err(), "answered only as its context ended")
}
