package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// routeBroker answers every Route; with hold set, only once hold is
// closed, signalling got (when set) as it begins to wait.
type routeBroker struct {
	pb.UnimplementedBrokerServer
	got  chan struct{}
	hold chan struct{}
}

func (b *routeBroker) Route(ctx context.Context, req *pb.RouteRequest) (*pb.RouteResponse, error) {
	if b.hold != nil {
		if b.got != nil {
			close(b.got)
		}
		select {
		case <-b.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &pb.RouteResponse{Topic: req.GetTopic(), Queues: 1, Writable: []int32{0}}, nil
}

// A ClusterClient kept every leader address it learned, each with its
// connection, for its whole life: a client living through node
// replacements under new addresses grew without bound, and dead addresses
// stayed in its round robin. It keeps a bounded number of learned
// addresses now, always those given to DialCluster, and a call in flight
// on a client it forgets completes; that client is closed after it.
func TestClusterClient_LearnedLeadersAreBounded(t *testing.T) {
	given, _ := serveFake(t, &routeBroker{})
	held := &routeBroker{got: make(chan struct{}), hold: make(chan struct{})}
	heldAddr, _ := serveFake(t, held)

	cc, err := DialCluster([]string{given}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A call in flight on a learned leader.
	cc.redirect(given, heldAddr)
	n, err := cc.acquire(heldAddr)
	require.NoError(t, err)
	heldClient := n.c
	cc.release(n)
	answered := make(chan error, 1)
	go func() {
		_, err := cc.Route(ctx, "t")
		answered <- err
	}()
	<-held.got

	// Leaders come and go under new addresses.
	prev := heldAddr
	for range 3 * maxLearnedAddrs {
		addr, _ := serveFake(t, &routeBroker{})
		cc.redirect(prev, addr) // prev's answer names the new leader
		_, err := cc.Route(ctx, "t")
		require.NoError(t, err)
		require.Equal(t, addr, cc.Leader())
		prev = addr
	}
	cc.mu.Lock()
	nodes, addrs := len(cc.clients), append([]string(nil), cc.addrs...)
	cc.mu.Unlock()
	assert.LessOrEqual(t, nodes, 1+maxLearnedAddrs, "connections kept")
	assert.LessOrEqual(t, len(addrs), 1+maxLearnedAddrs, "addresses kept")
	assert.Equal(t, given, addrs[0], "the address given is kept")
	assert.NotContains(t, addrs, heldAddr, "the oldest learned address is forgotten")

	// The call in flight on the forgotten client completes, and the
	// client is closed after it.
	assert.NotEqual(t, connectivity.Shutdown, heldClient.conn.GetState(), "closed under a call in flight")
	close(held.hold)
	require.NoError(t, <-answered)
	require.Eventually(t, func() bool { return heldClient.conn.GetState() == connectivity.Shutdown },
		30*time.Second, 5*time.Millisecond, "the forgotten client is closed once its call is over")
}

// A learned address that cannot be reached left the round robin only when
// the client closed: a dead node's address was tried again and again. One
// unreachable for unreachableForget leaves it; the address given stays.
func TestClusterClient_UnreachableLearnedAddressIsForgotten(t *testing.T) {
	old := unreachableForget
	unreachableForget = 0 // forgotten at its first failure
	t.Cleanup(func() { unreachableForget = old })
	given, _ := serveFake(t, &routeBroker{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := lis.Addr().String()
	require.NoError(t, lis.Close())

	cc, err := DialCluster([]string{given}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc.redirect(given, dead) // a stale answer names a dead node
	_, err = cc.Route(ctx, "t")
	require.NoError(t, err, "answered by the node given")
	cc.mu.Lock()
	defer cc.mu.Unlock()
	assert.Equal(t, []string{given}, cc.addrs)
	assert.NotContains(t, cc.clients, dead)
}

// The appends AppendAsync sent on a learned leader's stream did not count
// as that node's answers: a leader unreachable once, long ago, and since
// reached only by AppendAsync (a producer's sends), was forgotten at its
// next failure, as if it had not answered for all that time.
func TestClusterClient_AsyncAppendsCountAsAnswers(t *testing.T) {
	given, _ := serveFake(t, &routeBroker{})
	leaderAddr, _ := serveFake(t, &storingBroker{})

	cc, err := DialCluster([]string{given}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	cc.redirect(given, leaderAddr) // learned: the given node names it
	n, err := cc.acquire(leaderAddr)
	require.NoError(t, err)
	cc.mu.Lock()
	n.failingSince = time.Now().Add(-2 * unreachableForget) // a failure long past
	cc.mu.Unlock()
	cc.release(n)

	req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}
	errs := make(chan error, 1)
	cc.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) { errs <- err })
	require.NoError(t, <-errs, "stored by the leader")

	// One failure now: the node answered a moment ago.
	cc.redirect(leaderAddr, "")
	cc.unreachable(n)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	assert.Contains(t, cc.addrs, leaderAddr, "a node that has just answered is not forgotten at one failure")
	assert.Contains(t, cc.clients, leaderAddr)
}
