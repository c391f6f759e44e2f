package equeue_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// transports are the ways a producer or consumer reaches an engine: the
// consumer-group and delivery tests run over each. "cluster" is a 3-node
// replicated cluster (cluster_harness_test.go) reached through a
// remote.ClusterClient.
var transports = []string{"inproc", "remote", "cluster"}

const clusterTransport = "cluster"

// clusterSuiteEnv, set to 1, runs every transport test over "cluster";
// without it only the tests of clusterByDefault do (a cluster starts with
// an election and every write is a Raft commit: the whole set takes
// minutes).
const clusterSuiteEnv = "EQUEUE_CLUSTER_SUITE"

// clusterByDefault is the representative set run over "cluster" by
// default: groups and isolation, commits surviving a crash, orderly
// retries in place, the retry topic, the sliding window, pull consumers
// and rebalance, member expiry and identity, rights over the wire, and a
// restart of every node.
var clusterByDefault = map[string]bool{
	"TestConsumer_GroupsAreIsolated":                  true,
	"TestConsumer_CrashRedeliversOnlyUncommitted":     true,
	"TestConsumer_OrderlyKeepsOrderAndRetriesInPlace": true,
	"TestRetry_ThroughRetryTopicWithBackoff":          true,
	"TestRetry_CopyOfATopicMadeAgainIsNotDelivered":   true,
	"TestConsumer_SlidingWindow":                      true,
	"TestPullConsumer_FetchCommitAndRebalance":        true,
	"TestCoordinator_SilentMemberExpires":             true,
	"TestConsumer_DuplicateMemberIDRefused":           true,
	"TestSendBack_RightsHold":                         true,
	"TestPriority_RestartResumesEachLane":             true,
	"TestSendBack_MarkOutlivesARestart":               true,
	"TestGroup_AssignmentCarriesTheSessionTimeout":    true,
}

// clusterSuiteOnly skips t over "cluster" unless the whole suite runs
// over it (for tests that pick their transports themselves).
func clusterSuiteOnly(t *testing.T, transport string) {
	if transport == clusterTransport && os.Getenv(clusterSuiteEnv) != "1" {
		t.Skipf("over a cluster only with %s=1", clusterSuiteEnv)
	}
}

func forTransports(t *testing.T, test func(t *testing.T, transport string)) {
	top, _, _ := strings.Cut(t.Name(), "/")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			if tr == clusterTransport && !clusterByDefault[top] && os.Getenv(clusterSuiteEnv) != "1" {
				t.Skipf("over a cluster only with %s=1", clusterSuiteEnv)
			}
			test(t, tr)
		})
	}
}

// openOver opens an engine of the given store kind with opts and returns
// it with a broker that reaches it over transport (see brokerOver). Over
// "cluster" the engine is the leader's of a new 3-node cluster (whose
// nodes store in Badger whatever kind says) and the broker a
// ClusterClient of every node.
func openOver(t testing.TB, transport, kind string, opts *equeue.Options) (*equeue.Engine, equeue.Broker) {
	t.Helper()
	if transport == clusterTransport {
		c := newClusterRig(t, opts, nil, false)
		return c.leaderEngine(), c.dial(nil)
	}
	e, _ := openEngine(t, kind, opts)
	return e, brokerOver(t, e, transport)
}

// openOverRestartable is openOver on a durable store (Badger on disk)
// with a restart function: it closes the engine (over "cluster": stops
// every node) and opens it again on its data, and returns the new engine
// and a broker that reaches it.
func openOverRestartable(t testing.TB, transport string, opts *equeue.Options) (*equeue.Engine, equeue.Broker, func() (*equeue.Engine, equeue.Broker)) {
	t.Helper()
	if transport == clusterTransport {
		c := newClusterRig(t, opts, nil, true)
		cc := c.dial(nil)
		return c.leaderEngine(), cc, func() (*equeue.Engine, equeue.Broker) { return c.restart(), cc }
	}
	e, reopen := openEngine(t, "badger", opts)
	return e, brokerOver(t, e, transport), func() (*equeue.Engine, equeue.Broker) {
		e := reopen()
		return e, brokerOver(t, e, transport)
	}
}

// brokerOver returns e itself in-process, or a gRPC client of a
// remote.Server serving e on loopback. Both are torn down before e closes.
// A cluster cannot be put under an engine opened before: tests that run
// over "cluster" open their engine with openOver.
func brokerOver(t testing.TB, e *equeue.Engine, transport string) equeue.Broker {
	t.Helper()
	switch transport {
	case "inproc":
		return e
	case clusterTransport:
		t.Fatalf("brokerOver: open the engine with openOver to run over a cluster")
	}
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	c, err := remote.Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
