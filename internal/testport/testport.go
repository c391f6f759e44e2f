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

// Listen listens on a free loopback port below the ephemeral range.
func Listen(t testing.TB) net.Listener {
	t.Helper()
	for range 500 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", low+rand.IntN(span)))
		if err == nil {
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
		mu.Lock()
		seen := given[addr]
		given[addr] = true
		mu.Unlock()
		if !seen {
			out = append(out, addr)
		}
	}
	return out
}
