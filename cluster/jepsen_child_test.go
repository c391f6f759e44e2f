package cluster_test

import (
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/kafka"
	"github.com/equeue-go/equeue/remote"
)

// The multi-process test (jepsen_test.go) runs this test binary as three
// node processes. A child reads its part from the environment.
const (
	childEnv   = "EQUEUE_CLUSTER_CHILD" // node ID
	childDir   = "EQUEUE_CLUSTER_DIR"
	childPeers = "EQUEUE_CLUSTER_PEERS" // id=raftAddr=clientAddr,...
	// childDefaults set makes a node keep Raft's default timeouts.
	childDefaults = "EQUEUE_CLUSTER_DEFAULT_TIMEOUTS"
	// childCut names a file listing the Raft addresses this node's links
	// are cut to (the partition nemesis; see cutNet).
	childCut = "EQUEUE_CLUSTER_CUT_FILE"
	// childKafka, when set, is the address this node serves Kafka on.
	childKafka = "EQUEUE_CLUSTER_KAFKA"
)

// TestClusterChild is one node process; it does nothing unless started by
// TestCluster_Jepsen.
func TestClusterChild(t *testing.T) {
	id := os.Getenv(childEnv)
	if id == "" {
		t.Skip("child process of TestCluster_Jepsen")
	}
	var peers []cluster.Peer
	var self cluster.Peer
	for _, p := range strings.Split(os.Getenv(childPeers), ",") {
		f := strings.Split(p, "=")
		if len(f) != 3 {
			t.Fatalf("bad peer %q", p)
		}
		peer := cluster.Peer{ID: f[0], RaftAddr: f[1], ClientAddr: f[2]}
		peers = append(peers, peer)
		if peer.ID == id {
			self = peer
		}
	}
	o := nodeOptions(id, self.RaftAddr)
	if os.Getenv(childDefaults) != "" {
		o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout = 0, 0, 0
	}
	o.ClientAddr = self.ClientAddr
	o.KafkaAddr = os.Getenv(childKafka)
	o.Bootstrap, o.Peers = true, peers
	o.RaftLog = os.Stderr
	o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	var n *cluster.Node
	var err error
	if file := os.Getenv(childCut); file != "" {
		var cn *cutNet
		for i := 0; ; i++ { // a killed predecessor's port may take a moment to free
			if cn, err = newCutNet(self.RaftAddr); err == nil || i > 100 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("raft listener: %v", err)
		}
		stop := make(chan struct{})
		defer close(stop)
		go cn.follow(file, stop)
		o.RaftStream = cn
	}
	for i := 0; ; i++ { // a killed predecessor's ports may take a moment to free
		if n, err = cluster.Open(os.Getenv(childDir), o); err == nil || i > 100 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	srv, err := remote.NewBackendServer(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis := listenRetrying(t, self.ClientAddr)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() { _ = srv.Serve(lis) }()
	var ks *kafka.Server
	if o.KafkaAddr != "" {
		ks, err = kafka.NewServer(n, &kafka.Options{
			AdvertisedAddr: o.KafkaAddr, Logger: o.Logger,
			ConsumerSessionTimeout: 6 * time.Second, ConsumerHeartbeatInterval: 500 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		klis := listenRetrying(t, o.KafkaAddr)
		go func() { _ = ks.Serve(klis) }()
	}
	<-term
	if ks != nil {
		_ = ks.Close()
	}
	// Quiet cluster: apply everything the leader told us is committed
	// before closing, so every node's store can be compared.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s := n.Status()
		if s.AppliedIndex >= s.CommitIndex && s.LeaderID != "" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Stop()
	if err := n.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// listenRetrying listens on addr, waiting for a killed predecessor's port
// to free.
func listenRetrying(t *testing.T, addr string) net.Listener {
	var lis net.Listener
	var err error
	for i := 0; ; i++ {
		if lis, err = net.Listen("tcp", addr); err == nil || i > 100 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return lis
}
