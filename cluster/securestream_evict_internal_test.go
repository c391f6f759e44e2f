package cluster

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trackedConn is a connection under handshake, from ip, that only records
// being closed (track closes the one it makes room with).
type trackedConn struct {
	net.Conn
	ip     net.IP
	closed bool
}

func (c *trackedConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: c.ip, Port: 4242} }
func (c *trackedConn) Close() error         { c.closed = true; return nil }

// roomTracker is the bookkeeping of a secure stream's handshakes under
// way, without a listener.
func roomTracker() *secureStream {
	return &secureStream{pending: map[net.Conn]pendingConn{}, bySource: map[string]int{}}
}

// arrive tracks a connection from ip on s.
func arrive(t *testing.T, s *secureStream, ip net.IP) *trackedConn {
	t.Helper()
	c := &trackedConn{ip: ip}
	require.True(t, s.track(c))
	return c
}

// floodIP is the i-th address of a flood from many addresses.
func floodIP(i int) net.IP { return net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)) }

// A peer's handshakes under way are not closed for room before
// evictionGrace connections were accepted after them, whatever the
// flood's sources: one connection from each of many addresses (where
// every source has as many under way as the peer's, and which is the
// oldest of them decides nothing), and many addresses with fewer under
// way than the peer's, which dials on two connections at once.
func TestSecureStream_FloodFromManySourcesSparesAPeersFreshHandshake(t *testing.T) {
	peerIP := net.IPv4(192, 0, 2, 1)
	t.Run("one from each address", func(t *testing.T) {
		for round := range 30 {
			s := roomTracker()
			next := 0
			for range maxPendingHandshakes - 1 {
				arrive(t, s, floodIP(next))
				next++
			}
			peer := arrive(t, s, peerIP)
			for i := range evictionGrace {
				arrive(t, s, floodIP(next))
				next++
				require.False(t, peer.closed, "round %d: the peer's handshake closed by the flood's connection %d after it", round, i+1)
			}
			assert.Len(t, s.pending, maxPendingHandshakes)
		}
	})
	t.Run("fewer than the peer's from each address", func(t *testing.T) {
		s := roomTracker()
		for i := range maxPendingHandshakes - 2 {
			arrive(t, s, floodIP(i))
		}
		peer := []*trackedConn{arrive(t, s, peerIP), arrive(t, s, peerIP)}
		for i := range evictionGrace - 1 {
			arrive(t, s, floodIP(maxPendingHandshakes+i))
			for j, c := range peer {
				require.False(t, c.closed, "the peer's handshake %d closed by the flood's connection %d after it", j, i+1)
			}
		}
		assert.Equal(t, 2, s.bySource[peerIP.String()])
	})
}

// Among the sources with the most under way, room is made with the
// oldest handshake: a flood from a few addresses, each with more under
// way than a peer, closes only its own.
func TestSecureStream_FloodFromFewSourcesClosesOnlyItsOwn(t *testing.T) {
	s := roomTracker()
	var flood []*trackedConn
	for i := range maxPendingHandshakes - 1 {
		flood = append(flood, arrive(t, s, floodIP(i%9)))
	}
	peer := arrive(t, s, net.IPv4(192, 0, 2, 1))
	for i := range 10 * maxPendingHandshakes {
		flood = append(flood, arrive(t, s, floodIP(i%9)))
		require.False(t, peer.closed, "the peer's handshake closed by the flood's connection %d after it", i+1)
	}
	open := 0
	for _, c := range flood {
		if !c.closed {
			open++
		}
	}
	assert.Equal(t, maxPendingHandshakes-1, open, fmt.Sprintf("the flood's handshakes under way: %v", s.bySource))
}
