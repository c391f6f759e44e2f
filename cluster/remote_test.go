package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/remote"
)

var _ remote.Backend = (*cluster.Node)(nil)

// servedCluster is a testCluster whose nodes are each served over gRPC.
type servedCluster struct {
	*testCluster
	addrs   []string
	servers []*remote.Server
	done    []chan error
}

func newServedCluster(t *testing.T, n int) *servedCluster {
	t.Helper()
	var lis []net.Listener
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lis = append(lis, l)
		addrs = append(addrs, l.Addr().String())
	}
	c := newCluster(t, n, func(o *cluster.Options) {
		var i int
		_, _ = fmt.Sscanf(o.ID, "n%d", &i)
		o.ClientAddr = addrs[i-1]
	})
	sc := &servedCluster{testCluster: c, addrs: addrs}
	for i, node := range c.nodes {
		srv, err := remote.NewBackendServer(node, nil)
		require.NoError(t, err)
		done := make(chan error, 1)
		go func(l net.Listener) { done <- srv.Serve(l) }(lis[i])
		sc.servers = append(sc.servers, srv)
		sc.done = append(sc.done, done)
	}
	// Servers stop before the nodes close (cleanups run last first).
	t.Cleanup(func() {
		for i := range sc.servers {
			sc.stopServer(i)
		}
	})
	return sc
}

func (sc *servedCluster) stopServer(i int) {
	if sc.servers[i] == nil {
		return
	}
	sc.servers[i].Stop()
	<-sc.done[i]
	sc.servers[i] = nil
}

// kill stops node i's server and the node.
func (sc *servedCluster) kill(i int) {
	sc.stopServer(i)
	sc.stop(i)
}

// createTopicOver creates topic name with o through cc, across elections:
// OnLeader makes a call refused, or of unknown outcome, again on the next
// leader, and ErrTopicExists then says that an earlier call took effect
// (nothing else creates the test's topics).
func createTopicOver(ctx context.Context, t *testing.T, cc *remote.ClusterClient, name string, o equeue.TopicOptions) {
	t.Helper()
	require.NoError(t, cc.OnLeader(ctx, func(cl *remote.Client) error {
		err := cl.CreateTopicWith(ctx, name, o)
		if errors.Is(err, equeue.ErrTopicExists) {
			return nil
		}
		return err
	}), "create %s", name)
}

func TestCluster_FollowerNamesLeaderOverTheWire(t *testing.T) {
	sc := newServedCluster(t, 3)
	ctx := context.Background()
	leader := sc.leaderIndex()
	follower := (leader + 1) % 3
	c, err := remote.Dial(sc.addrs[follower], nil)
	require.NoError(t, err)
	defer c.Close()
	// A follower added a moment ago may not have applied the leader's
	// tenure entry yet (then it names no leader): wait for it.
	eventually(t, 30*time.Second, func() error {
		_, err := c.Route(ctx, "nothing")
		if !errors.Is(err, equeue.ErrNotLeader) {
			return fmt.Errorf("want ErrNotLeader, got %v", err)
		}
		var re *remote.Error
		require.True(t, errors.As(err, &re))
		if re.Leader != sc.addrs[leader] {
			return fmt.Errorf("follower names %q, leader serves at %s", re.Leader, sc.addrs[leader])
		}
		return nil
	})
}

func TestCluster_RemoteProducerAndConsumerSurviveLeaderLoss(t *testing.T) {
	sc := newServedCluster(t, 3)
	ctx := context.Background()
	// The client knows only one follower at first: it learns the leader.
	leader := sc.leaderIndex()
	cc, err := remote.DialCluster([]string{sc.addrs[(leader+1)%3], sc.addrs[(leader+2)%3], sc.addrs[leader]}, nil)
	require.NoError(t, err)
	defer cc.Close()
	createTopicOver(ctx, t, cc, "orders", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour})

	var mu sync.Mutex
	got := map[string]int{}
	cons, err := equeue.NewConsumer(cc, equeue.ConsumerOptions{
		Group: "billing", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		HeartbeatInterval: 200 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			got[string(m.Body)]++
			mu.Unlock()
			return nil
		},
	})
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	defer closeConsumer(t, cons)

	p, err := equeue.NewProducer(cc, nil)
	require.NoError(t, err)
	defer p.Close()
	sent := map[string]bool{}
	send := func(i int) {
		// A send whose outcome is unknown is sent again with the same ID:
		// the topic's dedup window stores it at most once.
		v := fmt.Sprintf("order-%d", i)
		id := fmt.Sprintf("id-%d", i)
		eventually(t, 30*time.Second, func() error {
			_, err := p.Send(ctx, &equeue.Message{ID: id, Topic: "orders", Keys: []string{v}, Body: []byte(v)})
			return err
		})
		sent[v] = true
	}
	for i := range 50 {
		send(i)
	}
	sc.kill(leader)
	for i := 50; i < 100; i++ {
		send(i)
	}
	eventually(t, 60*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		var missing []string
		for v := range sent {
			if got[v] == 0 {
				missing = append(missing, v)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%d not delivered: %s", len(missing), strings.Join(missing[:min(5, len(missing))], " "))
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for v := range got {
		assert.True(t, sent[v], "%s delivered but never sent", v)
	}
}
