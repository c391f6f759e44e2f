package cluster_test

import (
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// cutNet is a Raft stream layer whose links to some peers can be cut, for
// the partition nemesis: it refuses to dial a cut peer and closes the
// connections it dialed to one. Both ends of a link cut it, so the
// connections the other end dialed close too, and no traffic crosses.
type cutNet struct {
	net.Listener
	mu    sync.Mutex
	cut   map[string]bool
	conns map[net.Conn]string // dialed connections and their peer
}

var errCut = errors.New("link cut by the partition nemesis")

func newCutNet(addr string) (*cutNet, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &cutNet{Listener: l, cut: map[string]bool{}, conns: map[net.Conn]string{}}, nil
}

// Dial implements raft.StreamLayer.
func (c *cutNet) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	cut := c.cut[string(addr)]
	c.mu.Unlock()
	if cut {
		return nil, errCut
	}
	conn, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut[string(addr)] {
		_ = conn.Close()
		return nil, errCut
	}
	tc := &trackedConn{Conn: conn, owner: c}
	c.conns[tc] = string(addr)
	return tc, nil
}

// set cuts the links to peers (and heals every other).
func (c *cutNet) set(peers []string) {
	c.mu.Lock()
	c.cut = map[string]bool{}
	for _, p := range peers {
		c.cut[p] = true
	}
	var doomed []net.Conn
	for conn, peer := range c.conns {
		if c.cut[peer] {
			doomed = append(doomed, conn)
		}
	}
	c.mu.Unlock()
	for _, conn := range doomed {
		_ = conn.Close() // removes itself from conns
	}
}

// follow applies the peer list in file (comma-separated Raft addresses;
// missing or empty: no cut) every 20 ms until stop closes.
func (c *cutNet) follow(file string, stop <-chan struct{}) {
	last := "-"
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		b, _ := os.ReadFile(file)
		if s := strings.TrimSpace(string(b)); s != last {
			last = s
			var peers []string
			if s != "" {
				peers = strings.Split(s, ",")
			}
			c.set(peers)
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// Addr implements raft.StreamLayer.
func (c *cutNet) Addr() net.Addr { return c.Listener.Addr() }

type trackedConn struct {
	net.Conn
	owner *cutNet
	once  sync.Once
}

func (t *trackedConn) Close() error {
	t.once.Do(func() {
		t.owner.mu.Lock()
		delete(t.owner.conns, t)
		t.owner.mu.Unlock()
	})
	return t.Conn.Close()
}
