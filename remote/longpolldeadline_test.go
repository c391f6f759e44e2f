package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
	"github.com/equeue-go/equeue/remote"
)

// TestClient_LongPollDeadlineFollowsTheServerCap: a pull without a
// deadline of its own that asks to wait longer than the server's
// MaxPullWait (which a join's answer tells) is given up the server's cap
// plus the slack after it was sent when the connection stops passing bytes,
// not its own wait plus the slack: the server answers by its cap, so a
// silence past it is a broker gone. So for a group member's long-poll
// (with and without reading ahead: the client's shared PullMany call) and
// for a pull outside a group (a unary Pull).
func TestClient_LongPollDeadlineFollowsTheServerCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group bool
		ahead int
	}{
		{"member reading ahead", true, 0},
		{"member", true, -1},
		{"outside a group", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, &equeue.Options{MaxPullWait: 200 * time.Millisecond})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			s := startServer(t, e, "", nil)
			p := holdproxy.New(t, s.addr)
			c := dial(t, p.Addr(), &remote.ClientOptions{PullAhead: tc.ahead})
			t.Cleanup(p.LetGo) // before c's Close
			remote.SetLongPollSlack(c, 300*time.Millisecond)
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Len(t, a.Queues, 1)
			req := &equeue.PullRequest{Topic: "t", Queue: 0, Wait: 10 * time.Minute}
			if tc.group {
				req.Group, req.Member, req.Epoch = "g", "m", a.Queues[0].Epoch
			}
			p.Hang()
			done := make(chan error, 1)
			go func() {
				_, err := c.Pull(context.Background(), req) // no deadline of its own
				done <- err
			}()
			select {
			case err := <-done:
				require.Error(t, err, "the pull gave up on the silent server")
			case <-time.After(20 * time.Second):
				t.Fatal("a pull asking 10 m of a server capping waits at 200 ms still waits 20 s later")
			}
		})
	}
}

// slowPulls serves an engine whose store is slow to answer a pull: the
// first pull takes delay, and so does a long-poll's pull once its wait
// ended (WaitAny).
type slowPulls struct {
	*equeue.Engine
	delay time.Duration
	pulls atomic.Int32
}

func (s *slowPulls) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if s.pulls.Add(1) == 1 {
		sleepCtx(ctx, s.delay)
	}
	return s.Engine.Pull(ctx, req)
}

func (s *slowPulls) WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error {
	err := s.Engine.WaitAny(ctx, pulls, wait)
	sleepCtx(ctx, s.delay)
	return err
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// TestReadAhead_LongPollDeadlineStartsWithTheLongPoll: a consumer's pull
// read ahead first pulls without waiting, then long-polls at the end of
// the queue. Each call's deadline starts when it is sent: the first one's
// time (here a slow store's, within the slack) does not come off the
// long-poll's wait plus slack, so a long-poll the server answers within it
// is not given up.
func TestReadAhead_LongPollDeadlineStartsWithTheLongPoll(t *testing.T) {
	ctx := ctxT(t)
	const slack, delay, wait = 1500 * time.Millisecond, time.Second, 200 * time.Millisecond
	b := &slowPulls{Engine: openEngine(t, nil), delay: delay}
	require.NoError(t, b.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewBackendServer(b, nil)
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "").addr, nil)
	remote.SetLongPollSlack(c, slack)
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	res, err := c.Pull(context.Background(), &equeue.PullRequest{Topic: "t", Queue: 0, Wait: wait, // no deadline of its own
		Group: "g", Member: "m", Epoch: a.Queues[0].Epoch})
	require.NoError(t, err, "each call answered within its own wait plus slack")
	require.Equal(t, equeue.PullNoNewMessage, res.Status)
	require.Equal(t, int32(3), b.pulls.Load(), "the pull without a wait, then the long-poll's before and after its wait")
}
