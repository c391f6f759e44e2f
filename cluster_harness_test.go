package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// The "cluster" transport: a 3-node cluster in this process, on loopback,
// each node served over gRPC; producers and consumers reach it through a
// remote.ClusterClient that knows every node, and the test's engine is the
// leader's (admin calls and inspection go to it directly).

// clusterNodes is the size of a test cluster.
const clusterNodes = 3

// Raft timeouts of a test cluster. A cluster starts with one election,
// which takes one to two heartbeat timeouts; shorter timeouts start it
// sooner, but on a loaded machine (tests under -race beside others) a
// leader then loses its lease now and then, and the test's engine closes
// under it: 400 ms did, under 1,000 concurrent requests, and 1 s did once
// under -race with a load average of 8 from other work.
const (
	clusterHeartbeat = 1500 * time.Millisecond
	clusterLease     = 1500 * time.Millisecond
)

// clusterRig is a running test cluster.
type clusterRig struct {
	t         testing.TB
	engine    equeue.Options
	server    *remote.ServerOptions
	durable   bool // Badger on disk (survives restart) rather than in memory
	dirs      []string
	raftAddrs []string       // kept across restarts
	addrs     []string       // client (gRPC) addresses, kept across restarts
	lis       []net.Listener // the first listener of each address
	nodes     []*cluster.Node
	servers   []*remote.Server
	served    []chan error
}

// newClusterRig starts a cluster whose leader runs an engine with opts
// (kind-specific fields are the node's: its store is Badger) and whose
// servers use srv. The cluster is stopped when the test ends.
func newClusterRig(t testing.TB, opts *equeue.Options, srv *remote.ServerOptions, durable bool) *clusterRig {
	t.Helper()
	c := &clusterRig{t: t, server: srv, durable: durable}
	if opts != nil {
		c.engine = *opts
	}
	base := t.TempDir()
	for i := range clusterNodes {
		c.dirs = append(c.dirs, filepath.Join(base, fmt.Sprintf("n%d", i+1)))
		// Below the ephemeral range, so that a restart can listen on the
		// same addresses again (testport).
		rl := testport.Listen(t)
		c.raftAddrs = append(c.raftAddrs, rl.Addr().String())
		require.NoError(t, rl.Close())
		l := testport.Listen(t)
		c.addrs = append(c.addrs, l.Addr().String())
		c.lis = append(c.lis, l)
	}
	c.nodes = make([]*cluster.Node, clusterNodes)
	c.servers = make([]*remote.Server, clusterNodes)
	c.served = make([]chan error, clusterNodes)
	t.Cleanup(c.stop)
	c.startNode(0, true)
	c.leader()
	for i := 1; i < clusterNodes; i++ {
		c.startNode(i, false)
		c.retry(30*time.Second, func() error {
			return c.leader().AddVoter(context.Background(), c.nodes[i].ID(), c.raftAddrs[i])
		})
	}
	return c
}

func (c *clusterRig) startNode(i int, bootstrap bool) {
	c.t.Helper()
	o := &cluster.Options{
		ID: fmt.Sprintf("n%d", i+1), RaftAddr: c.raftAddrs[i], ClientAddr: c.addrs[i], Bootstrap: bootstrap,
		HeartbeatTimeout: clusterHeartbeat, ElectionTimeout: clusterHeartbeat, LeaderLeaseTimeout: clusterLease,
	}
	eo := c.engine
	eo.Store, eo.InMemory, eo.Badger = nil, false, nil
	o.Engine = &eo
	if !c.durable {
		bo := store.DefaultBadgerOptions()
		bo.InMemory = true
		o.Badger = &bo
	}
	n, err := cluster.Open(c.dirs[i], o)
	for try := 0; c.lis[i] != nil && errors.Is(err, syscall.EADDRINUSE) && try < 5; try++ {
		// A first start only (a restart must keep its address): the
		// port testport found free was taken since by another test
		// binary running beside this one; take another.
		c.raftAddrs[i] = testport.Addr(c.t)
		o.RaftAddr = c.raftAddrs[i]
		n, err = cluster.Open(c.dirs[i], o)
	}
	require.NoError(c.t, err)
	c.nodes[i] = n
	c.raftAddrs[i] = n.RaftAddr()
	srv, err := remote.NewBackendServer(n, c.server)
	require.NoError(c.t, err)
	l := c.lis[i]
	if l == nil { // a restart: listen again on the same address
		l, err = net.Listen("tcp", c.addrs[i])
		require.NoError(c.t, err)
	}
	c.lis[i] = nil
	c.servers[i], c.served[i] = srv, make(chan error, 1)
	go func(done chan error) { done <- srv.Serve(l) }(c.served[i])
}

func (c *clusterRig) stopNode(i int) {
	c.t.Helper()
	if c.servers[i] != nil {
		c.servers[i].Stop()
		<-c.served[i]
		c.servers[i] = nil
	}
	if c.nodes[i] != nil {
		require.NoError(c.t, c.nodes[i].Close())
		c.nodes[i] = nil
	}
}

// stop stops every server, then every node.
func (c *clusterRig) stop() {
	for i := range c.nodes {
		c.stopNode(i)
		if c.lis[i] != nil { // never served
			_ = c.lis[i].Close()
			c.lis[i] = nil
		}
	}
}

// restart stops every node and starts them again on their data, then
// returns the new leader's engine.
func (c *clusterRig) restart() *equeue.Engine {
	c.t.Helper()
	require.True(c.t, c.durable, "only a cluster on disk keeps its data across a restart")
	c.stop()
	for i := range c.nodes {
		c.startNode(i, false)
	}
	return c.leaderEngine()
}

// retry runs f until it succeeds or within passes.
func (c *clusterRig) retry(within time.Duration, f func() error) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("cluster: not within %v: %v", within, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leader waits for the node that serves an engine.
func (c *clusterRig) leader() *cluster.Node {
	c.t.Helper()
	var l *cluster.Node
	c.retry(30*time.Second, func() error {
		for _, n := range c.nodes {
			if n != nil && n.Status().Serving {
				l = n
				return nil
			}
		}
		return errors.New("no node serves")
	})
	return l
}

// leaderEngine returns the engine the leader serves.
func (c *clusterRig) leaderEngine() *equeue.Engine {
	c.t.Helper()
	var e *equeue.Engine
	c.retry(30*time.Second, func() error {
		var err error
		e, err = c.leader().Engine()
		return err
	})
	return e
}

// dial returns a client of the cluster that knows every node; it is
// closed when the test ends, before the cluster stops.
func (c *clusterRig) dial(opts *remote.ClientOptions) *remote.ClusterClient {
	c.t.Helper()
	cc, err := remote.DialCluster(c.addrs, opts)
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}
