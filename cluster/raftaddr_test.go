package cluster_test

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// namedStream is a loopback stream layer that other nodes would reach at
// a host name: its Addr is that name, which need not resolve.
type namedStream struct {
	net.Listener
	name string
}

func (s namedStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

func (s namedStream) Addr() net.Addr { return namedAddr(s.name) }

type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

// A Raft address is checked for its form, not looked up: a host name that
// does not resolve yet (a DNS record published once the node runs, or a
// DNS server down for a moment) opens a node, whose transport looks it up
// when it dials. The name is under the reserved .invalid domain, which
// never resolves.
func TestOpen_RaftAddrHostNameIsNotLookedUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	const name = "n1.equeue.invalid:7000"
	o := &cluster.Options{ID: "n1", RaftAddr: name, RaftStream: namedStream{Listener: l, name: name}, Bootstrap: true,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond}
	n, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), o)
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close()) }()
	assert.Equal(t, name, n.RaftAddr())
	eventually(t, 30*time.Second, func() error {
		if !n.Status().Serving {
			return errors.New("the single node does not lead")
		}
		return nil
	})
}

// A host name that does not resolve when the node listens on it (no
// RaftStream) fails Open with the lookup's error, naming the address: the
// options are valid, so it is not ErrInvalidOptions, and, as the port is
// taken before the directory is created, nothing is left behind.
func TestOpen_UnresolvedRaftAddrFailsToListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	const name = "n1.equeue.invalid:0"
	n, err := cluster.Open(dir, &cluster.Options{ID: "n1", RaftAddr: name, Bootstrap: true})
	require.Error(t, err)
	assert.Nil(t, n)
	assert.NotErrorIs(t, err, equeue.ErrInvalidOptions)
	assert.ErrorContains(t, err, name)
	var dnsErr *net.DNSError
	assert.ErrorAs(t, err, &dnsErr, "the lookup's error is kept")
	assert.NoDirExists(t, dir)
}

// Raft addresses that are not HOST:PORT, or that name no host other nodes
// can dial, are still refused as invalid options.
func TestOpen_RaftAddrForm(t *testing.T) {
	for name, addr := range map[string]string{
		"no port":           "n1.example",
		"port out of range": "n1.example:65536",
		"negative port":     "n1.example:-1",
		"named port":        "n1.example:raft",
		"empty host":        ":7000",
		"unspecified IPv4":  "0.0.0.0:7000",
		"unspecified IPv6":  "[::]:7000",
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "n1")
			_, err := cluster.Open(dir, &cluster.Options{ID: "n1", RaftAddr: addr, Bootstrap: true})
			require.ErrorIs(t, err, equeue.ErrInvalidOptions)
			assert.ErrorContains(t, err, addr)
			assert.NoDirExists(t, dir)
		})
	}
}

// A node on plain TCP gives other nodes its Raft address as configured: a
// host name stays the name (a DNS name whose address changes when the
// node restarts, a Kubernetes headless service's), in Node.RaftAddr, in
// the configuration a node that bootstraps alone records, and so in what
// the other nodes dial, also after a restart. Before, the node gave the
// address its listener resolved the name to.
func TestOpen_AdvertisesTheConfiguredRaftHostName(t *testing.T) {
	_, port, err := net.SplitHostPort(testport.Addrs(t, 1)[0])
	require.NoError(t, err)
	name := net.JoinHostPort("localhost", port)
	dir := filepath.Join(t.TempDir(), "n1")
	o := &cluster.Options{ID: "n1", RaftAddr: name, Bootstrap: true,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond}
	for _, round := range []string{"bootstrapped", "opened again"} {
		n, err := cluster.Open(dir, o)
		require.NoError(t, err, round)
		assert.Equal(t, name, n.RaftAddr(), round)
		eventually(t, 30*time.Second, func() error {
			if !n.Status().Serving {
				return fmt.Errorf("%s: the single node does not lead", round)
			}
			return nil
		})
		servers := n.Status().Servers
		require.NoError(t, n.Close())
		require.Len(t, servers, 1, round)
		assert.Equal(t, name, servers[0].RaftAddr, "%s: the configuration records the name", round)
	}
}

// Port 0 picks a free port, which the configured host name is advertised
// with.
func TestOpen_AdvertisesTheHostNameWithThePortPicked(t *testing.T) {
	n, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), &cluster.Options{ID: "n1", RaftAddr: "localhost:0", Bootstrap: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, n.Close()) }()
	host, port, err := net.SplitHostPort(n.RaftAddr())
	require.NoError(t, err)
	assert.Equal(t, "localhost", host)
	assert.NotEqual(t, "0", port)
	conn, err := net.Dial("tcp", n.RaftAddr())
	require.NoError(t, err, "the node listens there")
	require.NoError(t, conn.Close())
}
