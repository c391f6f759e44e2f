// Package testport hands tests loopback addresses below the kernel's
// ephemeral port range (32768 and up by default on Linux).
//
// A test rig that restarts a node listens on that node's address again. A
// port taken from the ephemeral range (":0") may by then be the local port
// of an outgoing connection, of the test's own process or of another test
// binary running beside it, and the restart fails with "bind: address
// already in use" (CI failed so). Ports between 20000 and 32000 are never
// handed out as local ports of outgoing connections.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
)

const (
	low  = 20000
	span = 12000
)

// Listen listens on a free loopback port below the ephemeral range, one
// that no earlier call of Listen, Addr or Addrs in this process returned:
// an address a rig closed to hand to a node (a raft transport) is not
// handed to its next listener before the node listens on it.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	for range 500 {
		addr := fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(span))
		mu.Lock()
		seen := given[addr]
		mu.Unlock()
		if seen {
			continue
		}
		l, err := net.Listen("tcp", addr)
		if err == nil {
			mu.Lock()
			given[addr] = true
			mu.Unlock()
			return l
		}
	}
	t.Fatalf("no free loopback port between %d and %d", low, low+span)
	return nil
}

var (
	mu    sync.Mutex
	given = map[string]bool{}
)

// Addr returns a loopback address below the ephemeral range that was free
// a moment ago and that no earlier call of Addr or Addrs in this process
// returned; the caller listens on it (a raft transport, a child process).
func Addr(t testing.TB) string {
	t.Helper()
	return Addrs(t, 1)[0]
}

// Addrs returns n such addresses, distinct from each other.
func Addrs(t testing.TB, n int) []string {
	t.Helper()
	out := make([]string, 0, n)
	for len(out) < n {
		l := Listen(t)
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatalf("close probe listener: %v", err)
		}
		out = append(out, addr) // Listen returns none twice
	}
	return out
}
