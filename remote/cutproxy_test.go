package remote_test

import (
	"net"
	"sync"
	"testing"

	"github.com/equeue-go/equeue/internal/testport"
)

// cutProxy forwards TCP connections to a target and, once armed, closes
// the connection that carries the armed byte budget's last byte in one
// direction: the first N bytes it passes that way after Arm go through,
// the rest of that connection never does. It cuts once per Arm; the
// connections made after the cut pass as before.
type cutProxy struct {
	lis    net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
	// armed budgets, by direction: toServer counts the bytes clients send,
	// the other the bytes the server sends; negative means not armed.
	left [2]int
	cuts int // cuts made
	seen [2]int
}

// Directions of a cutProxy's budget.
const (
	toServer = 0
	toClient = 1
)

// newCutProxy starts a proxy to target on a loopback port, closed when the
// test ends.
func newCutProxy(t testing.TB, target string) *cutProxy {
	t.Helper()
	p := &cutProxy{lis: testport.Listen(t), target: target, left: [2]int{-1, -1}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = p.lis.Close()
		p.mu.Lock()
		p.closed = true
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Addr is the address clients dial.
func (p *cutProxy) Addr() string { return p.lis.Addr().String() }

// Arm cuts the connection that passes the n+1th byte sent in dir from now.
func (p *cutProxy) Arm(dir, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.left[dir] = n
}

// Cuts is how many connections the proxy cut.
func (p *cutProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Seen is how many bytes passed in dir in all.
func (p *cutProxy) Seen(dir int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[dir]
}

func (p *cutProxy) accept() {
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
		if p.closed {
			p.mu.Unlock()
			_ = in.Close()
			_ = out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(out, in, toServer) })
		p.wg.Go(func() { p.pipe(in, out, toClient) })
	}
}

// pipe copies src to dst; when the armed budget of dir runs out within a
// chunk, it passes the budget's part and closes both connections.
func (p *cutProxy) pipe(dst, src net.Conn, dir int) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			pass, cut := n, false
			p.mu.Lock()
			if l := p.left[dir]; l >= 0 {
				if n > l {
					pass, cut = l, true
					p.left[dir] = -1
					p.cuts++
				} else {
					p.left[dir] = l - n
				}
			}
			p.seen[dir] += pass
			p.mu.Unlock()
			if pass > 0 {
				if _, werr := dst.Write(buf[:pass]); werr != nil {
					return
				}
			}
			if cut {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				if tc, ok := src.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
				return
			}
		}
		if err != nil {
			return
		}
	}
}
