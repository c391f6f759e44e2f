package remote_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// heldJoin serves an engine whose JoinGroup waits, once entered, until
// release is closed.
type heldJoin struct {
	*equeue.Engine
	entered, release chan struct{}
}

func (b *heldJoin) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	close(b.entered)
	select {
	case <-b.release:
	case <-ctx.Done():
		return equeue.Assignment{}, ctx.Err()
	}
	return b.Engine.JoinGroup(ctx, req)
}

// TestClient_AnswerOfAConnectionBeforeTheLatestTellsNoCap: a join answered
// by a broker stopping gracefully (capping waits at 100 ms) reaches the
// client on the draining connection after the client connected to the
// broker now behind the address (capping them at 3 s). That answer is of
// the connection before: it does not reinstate the old cap, which the new
// connection made the client forget, so a long-poll asking 3 s may take
// its whole wait plus the slack and gets the broker's "no new message",
// not a deadline error at 100 ms plus the slack (found by review: the
// client learned the limits of any answer, whichever connection brought
// it).
//
// Over a Unix socket every connection of the client has the same local
// address (an unnamed socket), as it may have with a proxy or a dialer of
// its own: the connections are told apart all the same (found by review:
// the client named a connection by its local address alone, so over a
// Unix socket the stale answer counted).
func TestClient_AnswerOfAConnectionBeforeTheLatestTellsNoCap(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel() // each waits out a long-poll of its own server
			answerOfAConnectionBeforeTheLatest(t, network)
		})
	}
}

// answerOfAConnectionBeforeTheLatest is
// TestClient_AnswerOfAConnectionBeforeTheLatestTellsNoCap over network
// ("tcp" or "unix").
func answerOfAConnectionBeforeTheLatest(t *testing.T, network string) {
	ctx := ctxT(t)
	b1 := &heldJoin{Engine: openEngine(t, &equeue.Options{MaxPullWait: staleCap}), entered: make(chan struct{}), release: make(chan struct{})}
	require.NoError(t, b1.CreateTopic(ctx, "t", 1))
	srv1, err := remote.NewBackendServer(b1, &remote.ServerOptions{GracefulStopTimeout: -1})
	require.NoError(t, err)
	var s1 *server
	target := ""
	if network == "unix" {
		dir, err := os.MkdirTemp("", "eqsock") // short: a socket path has at most 107 bytes
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		lis, err := net.Listen("unix", filepath.Join(dir, "b.sock"))
		require.NoError(t, err)
		s1 = &server{srv: srv1, addr: lis.Addr().String(), served: make(chan error, 1)}
		go func() { s1.served <- srv1.Serve(lis) }()
		t.Cleanup(s1.stop)
		target = "unix://" + s1.addr
	} else {
		s1 = serve(t, srv1, "")
		target = s1.addr
	}
	c := dial(t, target, nil)
	remote.SetLongPollSlack(c, staleSlack)

	type joined struct {
		a   equeue.Assignment
		err error
	}
	join := make(chan joined, 1)
	go func() {
		a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		join <- joined{a, err}
	}()
	<-b1.entered
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv1.GracefulStop() // waits for the held join
	}()

	// The restarted broker listens at the address once the first one's
	// listener is closed; the client reaches it on a new connection.
	e2 := openEngine(t, &equeue.Options{MaxPullWait: staleWait})
	require.NoError(t, e2.CreateTopic(ctx, "t", 1))
	require.NoError(t, e2.CreateTopic(ctx, "only-on-the-second", 1))
	var lis net.Listener
	eventually(t, 20*time.Second, func() bool {
		lis, err = net.Listen(network, s1.addr)
		return err == nil
	}, "the address is free again: %v", func() any { return err })
	srv2, err := remote.NewServer(e2, nil)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv2.Serve(lis) }()
	t.Cleanup(func() { srv2.Stop(); <-served })
	eventually(t, 20*time.Second, func() bool {
		_, err = c.Route(ctx, "only-on-the-second") // not the first broker, whose calls drain
		return err == nil
	}, "the client reaches the restarted broker: %v", func() any { return err })

	close(b1.release)
	j := <-join
	require.NoError(t, j.err)
	require.Equal(t, staleCap, j.a.MaxPullWait, "the join's answer tells the first broker's cap")
	<-stopped

	res, err := c.Pull(context.Background(), &equeue.PullRequest{Topic: "t", Queue: 0, Wait: staleWait}) // no deadline of its own
	require.NoError(t, err, "the restarted broker answers within the pull's wait plus the slack")
	require.Equal(t, equeue.PullNoNewMessage, res.Status)
}
