package remote_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_TheLongestWaitIsCappedAsInProcess asks, with contexts without
// a deadline, for waits as long as a time.Duration holds (math.MaxInt64,
// "wait as long as the broker lets me"): a pull and a heartbeat. Each is
// answered as in process, at the engine's MaxPullWait (a heartbeat at half
// its SessionTimeout): "no new message", or the assignment. Before, the client's bound on such a call
// (its wait plus a slack) overflowed to a negative timeout, and each
// failed at once with context.DeadlineExceeded.
func TestClient_TheLongestWaitIsCappedAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, &equeue.Options{MaxPullWait: 200 * time.Millisecond, SessionTimeout: time.Second})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const forever = time.Duration(math.MaxInt64)
	for name, b := range map[string]equeue.Broker{"engine": e, "remote": c} {
		t.Run(name, func(t *testing.T) {
			res, err := b.Pull(context.Background(), &equeue.PullRequest{Topic: "t", Queue: 0, Wait: forever})
			require.NoError(t, err, "pull")
			assert.Equal(t, equeue.PullNoNewMessage, res.Status)

			a, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g-" + name, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			_, err = b.Heartbeat(context.Background(), &equeue.HeartbeatRequest{Group: "g-" + name, Member: "m", KnownVersion: a.Version, Wait: forever})
			require.NoError(t, err, "heartbeat")
			require.NoError(t, b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g-" + name, Member: "m"}))

		})
	}
}
