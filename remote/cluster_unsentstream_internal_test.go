package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// refusedAddr is a loopback address nothing listens on: a connection to
// it is refused, so a call to it never leaves the client.
func refusedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// A ClusterClient that took a node refusing connections for the leader
// sent its AppendAsync calls there on the leader's stream; the stream
// could not open, nothing left the client (the error was marked not
// sent), yet the append failed with ErrUnavailable instead of going to
// the next node, as Append and a leaderless AppendAsync do.
func TestClusterClient_AppendAsyncGoesToTheNextNodeWhenTheLeadersStreamCannotOpen(t *testing.T) {
	e := openTopicEngine(t)
	l := &leaderless{}
	l.elected.Store(true)
	live := serveLeaderless(t, e, l)
	dead := refusedAddr(t)
	cc, err := DialCluster([]string{dead, live}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	cc.redirect(dead, dead) // a node named the dead one the leader

	addr, n := cc.knownLeader()
	require.NotNil(t, n, "the leader's node is taken as reachable: its stream is tried")
	require.Equal(t, dead, addr)
	cc.release(n)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	cc.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	require.NoError(t, <-done, "an append that never left the client goes to the next node")
	assert.Equal(t, live, cc.Leader())
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 1, "stored once")
}
