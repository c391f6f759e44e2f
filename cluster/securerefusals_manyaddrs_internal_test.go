package cluster

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdTimers makes r's window-end timers wait for the test: each armed
// one is kept, to be fired with fire.
type heldTimers struct {
	mu    sync.Mutex
	armed []func()
}

func holdTimers(r *refusalLog) *heldTimers {
	h := &heldTimers{}
	r.after = func(_ time.Duration, f func()) func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.armed = append(h.armed, f)
		return func() bool { return false } // fired by the test alone
	}
	return h
}

// fire runs the timers armed so far, and says how many.
func (h *heldTimers) fire() int {
	h.mu.Lock()
	armed := h.armed
	h.armed = nil
	h.mu.Unlock()
	for _, f := range armed {
		f()
	}
	return len(armed)
}

// A flood of well-formed hellos with wrong proofs from 50 addresses,
// each refused again and again, still leaves room in the window for the
// first line of a node of the cluster with a mistyped secret on another
// address, refused after them. Before, the flood's first 10 addresses
// used the window's lines past the burst, and the peer's line waited for
// a window the flood left room in.
func TestRefusalLog_FloodFromFiftyAddressesDoesNotHideALatePeer(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	holdTimers(r)
	now := time.Unix(1_000_000, 0) // one window for the whole test
	r.now = func() time.Time { return now }
	for round := range 5 {
		for i := range 50 {
			r.refused(&net.TCPAddr{IP: net.IPv4(203, 0, 113, byte(i)), Port: 4000 + round}, errWrongProof)
		}
	}
	for i := range 50 {
		assert.Equal(t, 1, h.countOf("WARN", "reason=wrong secret", fmt.Sprintf("remote=203.0.113.%d:", i)), "each flooding address has its first line: %v", h.lines())
	}
	peer := &net.TCPAddr{IP: net.IPv4(198, 51, 100, 9), Port: 7000}
	r.refused(peer, errWrongProof)
	assert.NotEmpty(t, h.find("WARN", "reason=wrong secret", "remote=198.51.100.9:7000"), "the late peer's first refusal is logged: %v", h.lines())
	assert.Equal(t, 51, h.countOf("WARN", "reason=wrong secret"), "one line an address, none more: %v", h.lines())
}

// A flood from more addresses than a window names logs the first lines
// of refusalAddresses of them past the burst, and at the window's end
// one line saying how many more addresses were refused, and how often:
// the lines stay bounded, and the operator learns that some were left
// out.
func TestRefusalLog_AddressesPastTheBoundAreSummedUpAtTheWindowsEnd(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	timers := holdTimers(r)
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	const sources = 1000
	for range 2 {
		for i := range sources {
			r.refused(&net.TCPAddr{IP: net.IPv4(10, 0, byte(i/256), byte(i%256)), Port: 5000}, errWrongProof)
		}
	}
	named := refusalBurst + refusalAddresses
	require.Equal(t, named, h.countOf("WARN", "cluster: refused a Raft connection", "reason=wrong secret"), "%v", h.lines())
	require.Equal(t, 1, timers.fire(), "one timer for the window's end")
	line := h.find("WARN", "reason=wrong secret", "more addresses")
	require.NotEmpty(t, line, "%v", h.lines())
	assert.Contains(t, line, fmt.Sprintf("addresses=%d", sources-named), "%s", line)
	assert.Contains(t, line, fmt.Sprintf("refusals=%d", 2*(sources-named)), "%s", line)
	assert.Equal(t, named+1, len(h.lines()), "%v", h.lines())

	// Said once: a window rolled over by a refusal does not say it again.
	now = now.Add(refusalWindow)
	r.refused(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5001}, errWrongProof)
	assert.Equal(t, 1, h.countOf("more addresses"), "%v", h.lines())
	assert.Equal(t, 0, timers.fire(), "a window without addresses past the bound arms none")
}

// A window that ends with a refusal before its timer fired (a timer late
// on a loaded machine) says its sum with that refusal, once.
func TestRefusalLog_SumIsSaidOnceWhenTheWindowRollsOverFirst(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	timers := holdTimers(r)
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	extra := 7
	for i := range refusalBurst + refusalAddresses + extra {
		r.refused(&net.TCPAddr{IP: net.IPv4(10, 1, byte(i/256), byte(i%256)), Port: 5000}, errWrongProof)
	}
	now = now.Add(refusalWindow)
	r.refused(&net.TCPAddr{IP: net.IPv4(10, 1, 0, 1), Port: 5001}, errWrongProof)
	line := h.find("more addresses")
	require.NotEmpty(t, line, "%v", h.lines())
	assert.Contains(t, line, fmt.Sprintf("addresses=%d", extra))
	timers.fire()
	assert.Equal(t, 1, h.countOf("more addresses"), "%v", h.lines())
}
