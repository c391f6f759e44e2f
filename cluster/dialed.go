package cluster

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The node closes its Raft connections to addresses its configuration no
// longer holds.
//
// hashicorp/raft's network transport keeps the connections its calls
// used, up to raftPoolSize for each address, and drops them only when one
// fails or the node closes (CloseStreams): it has no call that drops an
// address's. Once a node is removed from the configuration, or moved to
// another address, no call goes there any more, so the connections stayed
// open for as long as the node ran, and a removed node left running kept a
// goroutine reading each. dialedStream wraps the node's stream layer and
// tracks the connections it dialed by address; every reconcileEvery the
// node closes those to addresses the latest configuration does not hold
// (Node.closeRemovedConns, closeGone), and empties the transport's pool
// of them, so that a node added again at the address finds no closed
// connection there.
//
// What it leaves: a call to the address still under way when the node
// closes its connections fails (Raft stops calling a removed server once
// the removal is in its log, so that is at most one it had started); an
// answer read just before, whose connection returns to the pool just
// after, leaves that one closed connection pooled, until a call to the
// address takes it and fails. An address removed and added again between
// two checks may have such a call fail once; Raft tries it again.

// raftPoolSize is how many idle connections the node's Raft transport
// keeps for each address.
const raftPoolSize = 3

// errAddressGone is the error of a dial to an address whose pooled
// connections the node is dropping.
var errAddressGone = errors.New("cluster: raft connection: the address is no longer in the configuration")

// dialedStream is a raft.StreamLayer that tracks the connections it
// dialed by address.
type dialedStream struct {
	raft.StreamLayer

	mu    sync.Mutex
	conns map[raft.ServerAddress]map[*dialedConn]struct{}
	// refused are the addresses whose connections are being dropped
	// (forget to allow): Dial refuses them.
	refused map[raft.ServerAddress]bool
}

func newDialedStream(s raft.StreamLayer) *dialedStream {
	return &dialedStream{StreamLayer: s, conns: map[raft.ServerAddress]map[*dialedConn]struct{}{}, refused: map[raft.ServerAddress]bool{}}
}

// Dial dials address and tracks the connection until it closes. It fails
// with errAddressGone while the address's connections are being dropped.
func (s *dialedStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if s.isRefused(address) {
		return nil, errAddressGone
	}
	c, err := s.StreamLayer.Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	dc := &dialedConn{Conn: c, owner: s, address: address}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused[address] {
		_ = c.Close()
		return nil, errAddressGone
	}
	set := s.conns[address]
	if set == nil {
		set = map[*dialedConn]struct{}{}
		s.conns[address] = set
	}
	set[dc] = struct{}{}
	return dc, nil
}

func (s *dialedStream) isRefused(address raft.ServerAddress) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[address]
}

// forget closes the connections to the addresses cf does not hold, and
// refuses dials to them until allow: it returns those addresses. A
// configuration without servers (a node not yet added) closes nothing.
func (s *dialedStream) forget(cf raft.Configuration) []raft.ServerAddress {
	if len(cf.Servers) == 0 {
		return nil
	}
	in := make(map[raft.ServerAddress]bool, len(cf.Servers))
	for _, srv := range cf.Servers {
		in[srv.Address] = true
	}
	var gone []raft.ServerAddress
	var conns []*dialedConn
	s.mu.Lock()
	for a, set := range s.conns {
		if in[a] {
			continue
		}
		gone = append(gone, a)
		s.refused[a] = true
		for c := range set {
			conns = append(conns, c)
		}
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return gone
}

// allow lets Dial open connections to address again.
func (s *dialedStream) allow(address raft.ServerAddress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refused, address)
}

// count returns how many connections to address are open.
func (s *dialedStream) count(address raft.ServerAddress) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns[address])
}

// dialedConn is a dialed connection that leaves its stream's set when
// closed.
type dialedConn struct {
	net.Conn
	owner   *dialedStream
	address raft.ServerAddress
	once    sync.Once
}

func (c *dialedConn) Close() error {
	c.once.Do(func() {
		s := c.owner
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.conns[c.address], c)
		if len(s.conns[c.address]) == 0 {
			delete(s.conns, c.address)
		}
	})
	return c.Conn.Close()
}

// closeGone closes the connections trans opened through s to the
// addresses cf does not hold and drops them from trans's pool; it returns
// how many pooled connections it dropped for each such address.
func closeGone(trans *raft.NetworkTransport, s *dialedStream, cf raft.Configuration) map[raft.ServerAddress]int {
	gone := s.forget(cf)
	if len(gone) == 0 {
		return nil
	}
	dropped := make(map[raft.ServerAddress]int, len(gone))
	for _, a := range gone {
		dropped[a] = dropPooled(trans, a)
		s.allow(a)
	}
	return dropped
}

// dropPooled empties trans's pool of the connections to address, which
// forget closed: each call takes one and fails at once on it, without
// reaching the network, until the pool is empty and the call dials,
// which stream (forget) refuses. It returns how many it dropped.
func dropPooled(trans *raft.NetworkTransport, address raft.ServerAddress) int {
	dropped := 0
	// At most raftPoolSize are pooled; one more call finds the pool
	// empty. The bound holds should another call pool one meanwhile.
	for range raftPoolSize + 1 {
		var resp raft.RequestVoteResponse
		err := trans.RequestVote("", address, &raft.RequestVoteRequest{}, &resp)
		if err == nil || errors.Is(err, errAddressGone) {
			break
		}
		dropped++
	}
	return dropped
}
