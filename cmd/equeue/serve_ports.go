package main

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// servePort is an address serve listens on, with the flag that names it.
type servePort struct {
	flag, addr string
}

// servePorts are the listeners serve took, by the flag that names their
// address. serve takes every port before it creates its directory or opens
// the engine or the cluster node, so that a busy port leaves nothing
// behind, and hands the listeners to the servers and add-ons.
type servePorts map[string]net.Listener

// listenPorts listens on every port. When one is busy it closes those it
// took and returns an error naming the port's flag and address.
func listenPorts(want []servePort) (servePorts, error) {
	ports := make(servePorts, len(want))
	for _, p := range want {
		lis, err := net.Listen("tcp", p.addr)
		if err != nil {
			ports.close()
			return nil, fmt.Errorf("--%s: listen on %s: %w", p.flag, p.addr, err)
		}
		ports[p.flag] = lis
	}
	return ports, nil
}

// take hands the listener of flag over to whoever closes it from then on;
// close leaves it alone.
func (p servePorts) take(flag string) net.Listener {
	lis := p[flag]
	delete(p, flag)
	return lis
}

// close closes every listener not taken. A server closes the listener it
// serves when it stops; closing it again here does nothing.
func (p servePorts) close() {
	for _, lis := range p {
		_ = lis.Close()
	}
}

// wantedPorts lists the ports serve listens on, the add-ons' included.
func (c serveConfig) wantedPorts() []servePort {
	want := []servePort{{"listen", c.listen}}
	if c.metrics != "" {
		want = append(want, servePort{"metrics", c.metrics})
	}
	if c.cluster.enabled() {
		want = append(want, servePort{"cluster-raft", c.cluster.raft})
		if c.cluster.admin != "" {
			want = append(want, servePort{"cluster-admin", c.cluster.admin})
		}
	}
	for _, ad := range c.addons {
		want = append(want, ad.ports()...)
	}
	return want
}

// raftStream carries a cluster node's Raft traffic over plain TCP, on the
// listener serve took for --cluster-raft (cluster.Options.RaftStream). It
// gives other nodes --cluster-raft as given (cluster.Options.RaftStream's
// Addr must be RaftAddr), not the address the listener resolved its host
// name to: a DNS name whose address changes when the node restarts must
// stay a name in the cluster's configuration.
type raftStream struct {
	net.Listener
	advertise raftAddr
}

// newRaftStream carries Raft's traffic on lis, which listens on addr.
func newRaftStream(lis net.Listener, addr string) raftStream {
	host, port, _ := net.SplitHostPort(addr) // checked by serveCluster
	if a, ok := lis.Addr().(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port) // the port picked for port 0
	}
	return raftStream{Listener: lis, advertise: raftAddr(net.JoinHostPort(host, port))}
}

// Dial implements raft.StreamLayer.
func (raftStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// Addr is the address other nodes dial: --cluster-raft as given.
func (s raftStream) Addr() net.Addr { return s.advertise }

// raftAddr is a TCP address as given, a host name left unresolved.
type raftAddr string

func (a raftAddr) Network() string { return "tcp" }
func (a raftAddr) String() string  { return string(a) }
