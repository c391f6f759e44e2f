package cluster

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The node's Raft stream layer closes the connections it accepted.
//
// hashicorp/raft's network transport serves each connection a peer opened
// on a goroutine that reads until the peer closes it; Close stops the
// listener but leaves those connections open. A node closes the
// connections it opened itself (CloseStreams), so a healthy peer's
// handlers end; but a peer that hangs (a paused process, a host gone
// without a reset) keeps its connection, and the goroutine reading it
// outlives the Node, blocked for good. acceptedStream wraps the stream
// layer, plain TCP or Options.RaftStream, and closes every connection it
// accepted when the node closes.

// acceptedStream is a raft.StreamLayer that tracks the connections it
// accepted.
type acceptedStream struct {
	raft.StreamLayer

	mu     sync.Mutex
	conns  map[*acceptedConn]struct{}
	closed bool
}

func newAcceptedStream(s raft.StreamLayer) *acceptedStream {
	return &acceptedStream{StreamLayer: s, conns: map[*acceptedConn]struct{}{}}
}

// Accept accepts a connection and tracks it until it closes.
func (s *acceptedStream) Accept() (net.Conn, error) {
	c, err := s.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	ac := &acceptedConn{Conn: c, owner: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	s.conns[ac] = struct{}{}
	return ac, nil
}

// closeAccepted closes every connection accepted and still open, and any
// accepted from now on.
func (s *acceptedStream) closeAccepted() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*acceptedConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// acceptedConn is an accepted connection that leaves its stream's set
// when closed.
type acceptedConn struct {
	net.Conn
	owner *acceptedStream
	once  sync.Once
}

func (c *acceptedConn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.conns, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}

// tcpStream is plain TCP, as raft.NewTCPTransport sets it up, but for the
// address it advertises: RaftAddr as configured, not the address the
// listener resolved its host name to. Raft records a node under the
// address its transport gives (LocalAddr, from Addr: the configuration of
// a node that bootstraps alone, the header of every call it makes), and
// the other nodes dial that: a DNS name (a Kubernetes headless service's,
// say) whose address changes when the node restarts must stay a name.
type tcpStream struct {
	net.Listener
	advertise net.Addr
}

// errNotAdvertisable is returned by listenTCP when RaftAddr's host name
// resolves to an unspecified address (0.0.0.0, ::), which other nodes
// cannot dial.
var errNotAdvertisable = errors.New("the host resolves to an address other nodes cannot dial")

// listenTCP listens on addr, looking its host name up. It advertises addr
// with the port the listener took (the one picked for port 0).
func listenTCP(addr string) (*tcpStream, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok || a.IP.IsUnspecified() {
		_ = l.Close()
		return nil, fmt.Errorf("%w (%s)", errNotAdvertisable, l.Addr())
	}
	return &tcpStream{Listener: l, advertise: namedAddr(net.JoinHostPort(host, strconv.Itoa(a.Port)))}, nil
}

// Dial implements raft.StreamLayer.
func (t *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// Addr is the address other nodes dial: RaftAddr as configured.
func (t *tcpStream) Addr() net.Addr { return t.advertise }

// namedAddr is a TCP address as configured, a host name left unresolved.
type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }
