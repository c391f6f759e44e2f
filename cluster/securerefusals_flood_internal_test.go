package cluster

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A deliberate flood of well-formed hellos with random proofs is refused
// as wrong secrets from one address; a node of the cluster with a
// mistyped secret, on another address, is still reported at once: the
// first refusal of an address in a window is logged even when the
// flood used the window's lines, with the count of those left out.
// Before, its line waited for a window the flood left room in.
func TestRefusalLog_FloodDoesNotHideAnotherAddressesWrongSecret(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	holdTimers(r)
	now := time.Unix(1_000_000, 0) // one window for the whole test
	r.now = func() time.Time { return now }
	flooder := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242}
	for i := range 5 * refusalBurst {
		flooder.Port = 4242 + i // a new connection each time
		r.refused(flooder, errWrongProof)
	}
	require.Equal(t, refusalBurst, h.countOf("WARN", "reason=wrong secret", "remote=192.0.2.7:"), "the flood is rate-limited: %v", h.lines())

	peer := &net.TCPAddr{IP: net.IPv4(198, 51, 100, 9), Port: 7000}
	r.refused(peer, errWrongProof)
	line := h.find("WARN", "reason=wrong secret", "remote=198.51.100.9:7000")
	require.NotEmpty(t, line, "the peer's first refusal is logged at once: %v", h.lines())
	assert.Contains(t, line, fmt.Sprintf("suppressed=%d", 4*refusalBurst), "it says how many were left out")

	// Its next ones, in the same window, are counted as the flood's are.
	peer.Port++
	r.refused(peer, errWrongProof)
	assert.Equal(t, 1, h.countOf("remote=198.51.100.9:"), "%v", h.lines())
}

// A flood from many addresses does not fill the log either: a window
// logs refusalBurst lines of a reason, and the first lines of at most
// refusalAddresses more addresses; the next window's first line says
// how many were left out.
func TestRefusalLog_FloodFromManyAddressesIsBounded(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	holdTimers(r)
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	const sources = 1000
	for i := range sources {
		r.refused(&net.TCPAddr{IP: net.IPv4(10, 0, byte(i/256), byte(i%256)), Port: 5000}, errWrongProof)
	}
	logged := h.countOf("WARN", "refused a Raft connection", "reason=wrong secret")
	assert.Equal(t, refusalBurst+refusalAddresses, logged, "%v", h.lines())

	now = now.Add(refusalWindow)
	r.refused(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5001}, errWrongProof)
	assert.Equal(t, 1, h.countOf("WARN", "refused a Raft connection", "reason=wrong secret", fmt.Sprintf("suppressed=%d", sources-logged)), "%v", h.lines())
}

// A flood from one address that used the window's refusalBurst lines,
// then from many others, logs the first lines of refusalAddresses more
// addresses, not more: a window logs at most refusalBurst+refusalAddresses
// lines of a reason (and its sum), whoever used its first ones. Before,
// the addresses past the burst were counted with the flooder's, so
// refusalBurst-1 more were logged.
func TestRefusalLog_OneFlooderThenManyAddressesIsBounded(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	holdTimers(r)
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	flooder := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242}
	for range 5 * refusalBurst {
		r.refused(flooder, errWrongProof)
	}
	for i := range 2 * refusalAddresses {
		r.refused(&net.TCPAddr{IP: net.IPv4(198, 51, byte(i/256), byte(i%256)), Port: 5000}, errWrongProof)
	}
	assert.Equal(t, refusalBurst, h.countOf("WARN", "reason=wrong secret", "remote=192.0.2.7:"), "%v", h.lines())
	assert.Equal(t, refusalAddresses, h.countOf("WARN", "reason=wrong secret", "remote=198.51."), "%v", h.lines())
	assert.Equal(t, refusalBurst+refusalAddresses, h.countOf("WARN", "reason=wrong secret"), "%v", h.lines())
}
