package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// methodCounts counts the gRPC calls a node's server received, by method.
type methodCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *methodCounts) add(method string) {
	m.mu.Lock()
	m.n[method]++
	m.mu.Unlock()
}

func (m *methodCounts) get(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[method]
}

// countedCluster serves each node of a 3-node cluster over gRPC and
// counts the calls every server receives.
func countedCluster(t testing.TB, opts *remote.ServerOptions) (*testCluster, []string, []*methodCounts) {
	t.Helper()
	var lis []net.Listener
	var addrs []string
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lis = append(lis, l)
		addrs = append(addrs, l.Addr().String())
	}
	c := newCluster(t, 3, func(o *cluster.Options) {
		var i int
		_, _ = fmt.Sscanf(o.ID, "n%d", &i)
		o.ClientAddr = addrs[i-1]
	})
	var counts []*methodCounts
	for i, node := range c.nodes {
		srv, err := remote.NewBackendServer(node, opts)
		require.NoError(t, err)
		mc := &methodCounts{n: map[string]int{}}
		gs := grpc.NewServer(
			grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				mc.add(info.FullMethod)
				return h(ctx, req)
			}),
			grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				mc.add(info.FullMethod)
				return h(srv, ss)
			}))
		srv.Register(gs)
		served := make(chan error, 1)
		go func(l net.Listener) { served <- gs.Serve(l) }(lis[i])
		// Servers stop before the nodes close (cleanups run last first).
		t.Cleanup(func() {
			srv.Stop()
			gs.Stop()
			<-served
		})
		counts = append(counts, mc)
	}
	return c, addrs, counts
}

// A producer's SendAsync through a ClusterClient pipelines on the leader's
// append stream (no unary Append per message) and follows the leader when
// leadership moves: every send succeeds and is stored once, on every node.
func TestClusterClient_SendAsyncPipelinesAndFollowsTheLeader(t *testing.T) {
	c, addrs, counts := countedCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader := c.leaderIndex()
	// Only a follower is known at first: the first call learns the leader.
	cc, err := remote.DialCluster([]string{addrs[(leader+1)%3], addrs[(leader+2)%3], addrs[leader]}, nil)
	require.NoError(t, err)
	defer cc.Close()
	createTopicOver(ctx, t, cc, "t", equeue.TopicOptions{Queues: 2})
	require.Equal(t, addrs[leader], cc.Leader())

	p, err := equeue.NewProducer(cc, nil)
	require.NoError(t, err)
	defer p.Close()
	// sent: every value sent, and whether it was acknowledged. A leader
	// that loses its lease under load (the tests' Raft timeouts are short)
	// answers the appends it was committing as unknown: legitimate, and
	// checked below as "at most once"; any other error fails the test.
	sent := map[string]bool{}
	sendAll := func(from, n int) {
		fs := make([]*equeue.SendFuture, n)
		for i := range fs {
			fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m%d", from+i)})
		}
		for i, f := range fs {
			_, err := f.Result(ctx)
			if !errors.Is(err, equeue.ErrIndeterminate) {
				require.NoError(t, err, "send %d", from+i)
			}
			sent[fmt.Sprintf("m%d", from+i)] = err == nil
		}
	}

	const n = 400
	sendAll(0, n)
	assert.Equal(t, 1, counts[leader].get(pb.Broker_AppendStream_FullMethodName), "one append stream to the leader")
	assert.Zero(t, counts[leader].get(pb.Broker_Append_FullMethodName), "no unary Append while the leader is known")

	// Move the leadership: sends to the old leader are refused as not
	// leader (nothing stored) and follow it to the new one.
	next := (leader + 1) % 3
	require.NoError(t, c.nodes[leader].TransferLeadership(ctx, c.id(next)))
	sendAll(n, n)
	// The client learns where the leader is from its calls. Under load the
	// leadership may move on again (the tests' Raft timeouts are short):
	// follow the node that leads now.
	require.Eventually(t, func() bool {
		next = c.leaderIndex()
		_ = cc.OnLeader(ctx, func(cl *remote.Client) error { _, err := cl.Route(ctx, "t"); return err })
		return cc.Leader() == addrs[next]
	}, 30*time.Second, 20*time.Millisecond)
	before := counts[next].get(pb.Broker_Append_FullMethodName)
	sendAll(2*n, n)
	assert.Equal(t, before, counts[next].get(pb.Broker_Append_FullMethodName), "pipelined again once the new leader is known")
	assert.GreaterOrEqual(t, counts[next].get(pb.Broker_AppendStream_FullMethodName), 1)

	c.waitConverged()
	c.closeAll()
	var first map[string]int
	for i, d := range c.dirs {
		got := map[string]int{}
		for _, bodies := range readAll(t, d, "t") {
			for _, b := range bodies {
				got[b]++
			}
		}
		for v, acked := range sent {
			if acked {
				assert.Equal(t, 1, got[v], "node %d holds acknowledged %s %d times", i, v, got[v])
			}
		}
		for v, k := range got {
			_, ok := sent[v]
			assert.True(t, ok, "node %d holds %s, never sent", i, v)
			assert.Equal(t, 1, k, "node %d holds %s %d times", i, v, k)
		}
		if first == nil {
			first = got
		}
		assert.Equal(t, first, got, "node %d holds what node 0 holds", i)
	}
}

// A token without the produce right cannot append through a cluster
// client's AppendAsync either: every append is refused as permission denied
// (not retried as a leader change), and nothing is stored.
func TestClusterClient_AppendAsyncNeedsTheProduceRight(t *testing.T) {
	c, addrs, _ := countedCluster(t, &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"admin": remote.RightAll, "reader": remote.RightConsume}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	leader := c.leaderIndex()
	admin, err := remote.DialCluster([]string{addrs[leader]}, &remote.ClientOptions{Token: "admin"})
	require.NoError(t, err)
	defer admin.Close()
	createTopicOver(ctx, t, admin, "t", equeue.TopicOptions{Queues: 1})

	reader, err := remote.DialCluster([]string{addrs[(leader+1)%3], addrs[leader]}, &remote.ClientOptions{Token: "reader"})
	require.NoError(t, err)
	defer reader.Close()
	// A pull (the consume right suffices) learns the leader.
	_, err = reader.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 1})
	require.NoError(t, err)
	require.Equal(t, addrs[leader], reader.Leader())
	// AppendAsync directly: a Producer would be refused its route first.
	errs := make(chan error, 20)
	for i := range cap(errs) {
		reader.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{Body: []byte(fmt.Sprint(i))}}},
			func(_ equeue.AppendResult, err error) { errs <- err })
	}
	for i := range cap(errs) {
		assert.ErrorIs(t, <-errs, remote.ErrPermissionDenied, "append %d", i)
	}
	res, err := admin.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 100})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "nothing stored")
}
