package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// The nodes of two clusters refuse each other's Raft connections.
//
// A node refuses the entries and snapshots of another cluster
// (clusterid.go), but Raft's other calls carry no cluster ID: heartbeats,
// votes and pre-votes, TimeoutNow. A node of another cluster named in
// Peers by mistake (the directory of a cluster that ran on the same
// addresses, say) has a log that looks later than this cluster's, and
// while this cluster has no leader it won its nodes' votes; they refused
// its entries but took its heartbeats, and nothing committed from then on.
//
// So a Raft connection starts with a hello each way: the node that dials
// sends its cluster ID, the node that accepts answers with its own, and
// each refuses the connection (ErrForeignCluster) when both have an ID
// and the two differ. No call of a node of another cluster reaches Raft,
// and no call of this node reaches that node's. A node without an ID yet
// (a new node, or every node of a new cluster until its first leader
// starts its tenure) takes any connection, and once it takes an ID it
// closes a connection whose other end said another. A connection opened
// by a version before hellos, whose first byte is a Raft call's type, is
// taken with no ID known: such a node's calls are checked on their entries
// and snapshots alone, as before.

// helloMagic starts a hello. Its first byte is no Raft call's type (the
// network transport's are 0 to 4), which tells a connection of a version
// before hellos apart.
var helloMagic = []byte("\xffeqraft")

// helloVersion is the version of the hello this node speaks.
const helloVersion = 1

// errHello is the error of a connection that does not start with a hello
// this node reads.
var errHello = errors.New("cluster: raft connection: no hello this node reads")

// refusalLogEvery bounds how often a node logs its refusals of the nodes
// of one other cluster: they dial again at every heartbeat and election.
const refusalLogEvery = time.Minute

// appendHello appends the hello of a node whose cluster ID is id.
func appendHello(b []byte, id string) []byte {
	b = append(b, helloMagic...)
	b = append(b, helloVersion, byte(len(id)))
	return append(b, id...)
}

// readHelloRest reads the rest of a hello whose first byte was read, and
// returns the cluster ID it gives.
func readHelloRest(r io.Reader) (string, error) {
	var fixed [8]byte // the magic's other bytes, the version, the ID's length
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return "", err
	}
	if !bytes.Equal(fixed[:6], helloMagic[1:]) {
		return "", errHello
	}
	if v := fixed[6]; v != helloVersion {
		return "", fmt.Errorf("%w: version %d (this node speaks version %d)", errHello, v, helloVersion)
	}
	id := make([]byte, fixed[7])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", err
	}
	return string(id), nil
}

// helloStream is a raft.StreamLayer whose connections start with a hello.
type helloStream struct {
	raft.StreamLayer
	// id returns this node's cluster ID ("" while it has none).
	id  func() string
	log *slog.Logger
	// noHello makes Dial send no hello, as a version before hellos (tests).
	noHello bool

	mu     sync.Mutex
	logged map[string]time.Time // another cluster's ID -> its last refusal logged
}

func newHelloStream(s raft.StreamLayer, id func() string, log *slog.Logger) *helloStream {
	return &helloStream{StreamLayer: s, id: id, log: log, logged: map[string]time.Time{}}
}

// Dial opens a connection to address and exchanges hellos; it fails with
// an error matching ErrForeignCluster when the node there is of another
// cluster.
func (s *helloStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	start := time.Now()
	conn, err := s.StreamLayer.Dial(address, timeout)
	if err != nil || s.noHello {
		return conn, err
	}
	own := s.id()
	peer, err := dialHello(conn, own, helloTimeout(timeout, time.Since(start)))
	if err == nil {
		err = s.check(own, peer, string(address))
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("cluster: raft connection to %s: %w", address, err)
	}
	c := &helloConn{Conn: conn, s: s, peer: peer}
	c.settled.Store(own != "")
	return c, nil
}

// helloTimeout is what is left for the hellos of a dial given timeout
// (none when zero) that took spent to connect: the dial and its hellos
// together take no longer than the timeout Raft gave, and the hellos have
// at least a millisecond.
func helloTimeout(timeout, spent time.Duration) time.Duration {
	if timeout <= 0 {
		return 0
	}
	return max(timeout-spent, time.Millisecond)
}

// dialHello sends own's hello on conn and reads the answer, within
// timeout (none when zero).
func dialHello(conn net.Conn, own string, timeout time.Duration) (string, error) {
	if timeout > 0 {
		if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
			return "", err
		}
	}
	if _, err := conn.Write(appendHello(nil, own)); err != nil {
		return "", err
	}
	var first [1]byte
	if _, err := io.ReadFull(conn, first[:]); err != nil {
		return "", err
	}
	if first[0] != helloMagic[0] {
		return "", errHello
	}
	peer, err := readHelloRest(conn)
	if err != nil {
		return "", err
	}
	return peer, conn.SetDeadline(time.Time{})
}

// Accept accepts a connection, whose hello its first Read answers.
func (s *helloStream) Accept() (net.Conn, error) {
	c, err := s.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	return &helloConn{Conn: c, s: s, accepted: true}, nil
}

// check refuses, with an error matching ErrForeignCluster, a connection
// between this node, of cluster own, and the node at addr, of cluster
// peer.
func (s *helloStream) check(own, peer, addr string) error {
	if own == "" || peer == "" || own == peer {
		return nil
	}
	err := fmt.Errorf("%w: this node's cluster ID is %s, the one of the node at %s %s", ErrForeignCluster, showID(own), addr, showID(peer))
	s.mu.Lock()
	last, seen := s.logged[peer]
	log := !seen || time.Since(last) >= refusalLogEvery
	if log {
		if len(s.logged) >= 64 {
			clear(s.logged)
		}
		s.logged[peer] = time.Now()
	}
	s.mu.Unlock()
	if log && s.log != nil {
		s.log.Error("refused a Raft connection of another cluster: the node at the other end holds another cluster's data; remove it from the configuration it is in, or empty its directory to add it as a new node",
			"peer", addr, "err", err)
	}
	return err
}

// helloConn is a connection that started with hellos. It refuses to
// carry anything once this node took a cluster ID other than the one the
// other end gave.
type helloConn struct {
	net.Conn
	s *helloStream
	// accepted: the other end dialed, and its hello is read, and
	// answered, at the first Read or Write.
	accepted bool
	hello    sync.Once
	helloErr error
	// pending is the first byte of a connection of a version before
	// hellos: a Raft call's type, Read's first.
	pending []byte
	// peer is the cluster ID the other end gave in its hello ("" for a
	// version before hellos).
	peer string
	// settled is set once this node has an ID: the check of the hello,
	// or of ready, stands for good (an ID never changes).
	settled atomic.Bool
}

// Read reads from the connection.
func (c *helloConn) Read(p []byte) (int, error) {
	if err := c.ready(); err != nil {
		return 0, err
	}
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// Write writes to the connection.
func (c *helloConn) Write(p []byte) (int, error) {
	if err := c.ready(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// ready answers the other end's hello, once, and refuses the connection
// when this node took an ID since the hello other than the other end's.
func (c *helloConn) ready() error {
	if c.accepted {
		c.hello.Do(c.answerHello)
		if c.helloErr != nil {
			return c.helloErr
		}
	}
	if c.settled.Load() {
		return nil
	}
	own := c.s.id()
	if own == "" {
		return nil
	}
	if err := c.s.check(own, c.peer, c.RemoteAddr().String()); err != nil {
		_ = c.Conn.Close()
		return err
	}
	c.settled.Store(true)
	return nil
}

// answerHello reads the other end's hello and answers with this node's;
// it refuses the connection when the two are of different clusters.
func (c *helloConn) answerHello() {
	var first [1]byte
	if _, err := io.ReadFull(c.Conn, first[:]); err != nil {
		c.helloErr = err
		return
	}
	own := c.s.id()
	if first[0] != helloMagic[0] {
		c.pending = first[:] // a version before hellos
		c.settled.Store(own != "")
		return
	}
	peer, err := readHelloRest(c.Conn)
	if err != nil {
		c.helloErr = err
		return
	}
	// Answered even when refused: the other end learns why.
	if _, err := c.Conn.Write(appendHello(nil, own)); err != nil {
		c.helloErr = err
		return
	}
	c.peer = peer
	if err := c.s.check(own, peer, c.RemoteAddr().String()); err != nil {
		c.helloErr = err
		return
	}
	c.settled.Store(own != "")
}
