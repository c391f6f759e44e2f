// Package holdproxy is a TCP proxy for tests that can stop passing bytes
// without closing its connections: a black-holing partition, or a server
// stopped with SIGSTOP, as a client sees it.
package holdproxy

import (
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Proxy forwards TCP connections to a target; while held it passes no
// byte either way: calls through it hang until it is let go.
type Proxy struct {
	lis    net.Listener
	target string
	done   chan struct{}
	wg     sync.WaitGroup // the accept loop and the pipes
	mu     sync.Mutex
	held   chan struct{} // set while held; closed when let go
	conns  []net.Conn
	closed bool // the test ended: connections accepted since are closed at once
}

// New starts a proxy to target on a loopback port; it closes its
// listener and connections when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &Proxy{lis: lis, target: target, done: make(chan struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		close(p.done)
		_ = lis.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait() // the pipes end with their connections
	})
	return p
}

// Addr is the address clients dial to reach the target through p.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

func (p *Proxy) accept() {
	for {
		in, err := p.lis.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed { // accepted as the test ended, after its connections were closed
			p.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(out, in) })
		p.wg.Go(func() { p.pipe(in, out) })
	}
}

// pipe copies src to dst, holding each chunk while the proxy is held.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			held := p.held
			p.mu.Unlock()
			if held != nil {
				select {
				case <-held:
				case <-p.done:
					return
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Hang stops passing bytes, either way, until LetGo. Idempotent.
func (p *Proxy) Hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(chan struct{})
	}
}

// LetGo passes bytes again, those held included. Idempotent.
func (p *Proxy) LetGo() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

// Cut closes every connection passed so far, as a network that resets
// them would; the connections made after it are passed as before.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}
