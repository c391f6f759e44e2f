package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A Raft stream layer whose connections are authenticated by a secret the
// cluster's nodes share.
//
// The plain TCP transport lets whoever reaches RaftAddr send Raft calls: a
// forged AppendEntries of a later term deposes the leader and may carry
// entries. NewSecureStream's connections run TLS 1.3, which encrypts them
// and protects them from tampering, and then each end proves that it
// holds the secret, bound to that TLS session (secureproof.go). A
// connection whose handshake fails or takes longer than
// secureHandshakeTimeout is closed before Raft reads from it. Handshakes
// of accepted connections run on their own goroutines, so a peer that
// connects and sends nothing holds up no other peer, and at most
// maxPendingHandshakes are under way at once, maxPendingPerSource from
// one IP address: a new connection closes the oldest of its own address
// when that has its share, else, when all are taken, the oldest of the
// address with the most under way among those accepted evictionGrace
// connections or more before it, so that a flood from one address closes
// only its own, and a flood from many a peer's handshake only once
// evictionGrace connections came after it.

// secureHandshakeTimeout bounds the handshake of an accepted connection,
// and that of a dialed one when Raft gives no timeout.
const secureHandshakeTimeout = 10 * time.Second

// maxPendingHandshakes bounds the handshakes of accepted connections under
// way at once.
const maxPendingHandshakes = 64

// maxPendingPerSource bounds the handshakes under way of connections from
// one IP address. A node dials another on a few connections at once
// (Raft's pool, its pipeline, a snapshot), well below it.
const maxPendingPerSource = 8

// evictionGrace is how many connections are accepted after one before its
// handshake may be closed to make room for another source's: a flood
// from many addresses, each with as few under way as a peer's, or fewer,
// closes no peer's handshake that completes in the time the flood takes
// to open as many.
const evictionGrace = maxPendingHandshakes / 2

// secureStream is the raft.StreamLayer of NewSecureStream.
type secureStream struct {
	lis       net.Listener
	advertise net.Addr
	key       []byte // the proofs' key, derived from the secret and salt (raftProofKey)
	server    *tls.Config
	client    *tls.Config
	timeout   time.Duration

	accepted chan net.Conn // authenticated connections, for Accept
	done     chan struct{} // closed by Close
	lisDone  chan struct{} // closed when the listener fails for good
	lisErr   error         // why, set before lisDone is closed
	// refused, when set, is called with the error of each accepted
	// connection whose handshake failed.
	refused func(error)
	// refusals logs the accepted connections whose handshake failed.
	refusals *refusalLog
	// dials remembers the addresses whose listener refused the handshake.
	dials refusedDials

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	pending  map[net.Conn]pendingConn // accepted, handshake under way
	bySource map[string]int           // how many of pending come from each source
	seq      uint64                   // the order of the last connection accepted
}

// pendingConn is an accepted connection whose handshake is under way.
type pendingConn struct {
	seq    uint64 // the order it was accepted in
	source string // its IP address (sourceOf)
}

// NewSecureStream returns a Raft stream layer (for Options.RaftStream) on
// lis whose connections, dialed and accepted, run TLS 1.3 and are
// authenticated by secret: both ends must hold the same secret, which
// CheckRaftSecret must take (ErrRaftSecretTooShort or ErrRaftSecretWeak
// otherwise). Every node of the cluster must use it with the same secret;
// it derives the proofs' key from it at once, which takes tens of
// milliseconds. The TLS certificate is
// generated at start and not checked: the secret authenticates the
// session. advertise is the address other nodes dial (Options.RaftAddr);
// nil means lis's address. The stream owns lis from then on, closing it
// on Close, but not when it returns an error. A node opened on it logs
// each handshake of an accepted connection it refuses to Options.Logger,
// at warn, with the dialler's address and the reason (wrong secret,
// malformed hello, unverified bare proof, bad version, timeout, failed
// handshake), at most 10 lines of each reason in 10 seconds, and past
// them the first line of each address with none in those 10 seconds yet,
// for up to 100 more addresses, then one line at the end of the 10
// seconds saying how many more addresses it refused. It speaks the
// handshake's versions equeue-raft/3 and, with older nodes,
// equeue-raft/2.
func NewSecureStream(lis net.Listener, advertise net.Addr, secret []byte) (raft.StreamLayer, error) {
	return newSecureStream(lis, advertise, secret, nil, secureHandshakeTimeout, nil)
}

// NewSaltedSecureStream is NewSecureStream with the cluster's own salt:
// the key the nodes prove the secret with is derived from the secret and
// salt, so that keys computed ahead from guessed secrets for clusters
// without a salt, or with another, serve nothing against this one. The
// salt is no secret (whoever reads a node's command line sees it), but
// should be the cluster's own: its name, or a few random bytes made once
// for it. Every node of the cluster must use the same salt: a node with
// another, or none, is refused as one with another secret is (an added
// node's refusal makes Node.AddVoter's error match ErrPeerAuthFailed).
// An empty salt is none: the stream is NewSecureStream's, which nodes of
// versions before salts use.
func NewSaltedSecureStream(lis net.Listener, advertise net.Addr, secret, salt []byte) (raft.StreamLayer, error) {
	return newSecureStream(lis, advertise, secret, salt, secureHandshakeTimeout, nil)
}

// newSecureStream is NewSaltedSecureStream with the handshake timeout of
// accepted connections, and refused (may be nil) called with the error of
// each refused one.
func newSecureStream(lis net.Listener, advertise net.Addr, secret, salt []byte, timeout time.Duration, refused func(error)) (*secureStream, error) {
	if err := CheckRaftSecret(secret); err != nil {
		return nil, err
	}
	key, err := raftProofKey(secret, salt)
	if err != nil {
		return nil, err
	}
	cert, err := ephemeralCert()
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = lis.Addr()
	}
	s := &secureStream{
		lis: lis, advertise: advertise, key: key,
		server: serverConfig(cert),
		// The certificate is one the other node made up at its start: the
		// proofs of the secret authenticate the session instead.
		client:   &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: raftProtocols}, //nolint:gosec // see above
		timeout:  timeout,
		refused:  refused,
		refusals: newRefusalLog(),
		accepted: make(chan net.Conn),
		done:     make(chan struct{}),
		lisDone:  make(chan struct{}),
		pending:  map[net.Conn]pendingConn{},
		bySource: map[string]int{},
	}
	s.wg.Go(s.acceptLoop)
	return s, nil
}

// ephemeralCert makes a self-signed certificate for this run.
func ephemeralCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "equeue raft"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(100 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// acceptLoop accepts connections and authenticates each on its own
// goroutine, until the listener closes.
func (s *secureStream) acceptLoop() {
	for {
		c, err := s.lis.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				s.lisErr = err
				close(s.lisDone)
				return
			}
			// A passing failure (out of descriptors, say): wait a moment,
			// as the plain transport would, and go on.
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-s.done:
				return
			}
		}
		if !s.track(c) {
			_ = c.Close()
			continue
		}
		s.wg.Go(func() { s.authenticate(c) })
	}
}

// track records c as under handshake; false once the stream is closed.
// When c's source has maxPendingPerSource under way, it closes the oldest
// of them first; else, with maxPendingHandshakes under way, it closes one
// of those accepted evictionGrace connections or more before: of the
// source with the most under way, the oldest. A flood of connections that
// send nothing neither piles up until their timeout nor keeps out a peer
// that proves the secret in the time the flood takes to open
// evictionGrace new ones, and a flood from addresses with more under way
// than a peer's closes none of the peer's.
func (s *secureStream) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	src := sourceOf(c)
	switch {
	case s.bySource[src] >= maxPendingPerSource:
		s.evictLocked(s.oldestOfLocked(src))
	case len(s.pending) >= maxPendingHandshakes:
		s.evictLocked(s.roomVictimLocked())
	}
	s.seq++
	s.pending[c] = pendingConn{seq: s.seq, source: src}
	s.bySource[src]++
	return true
}

// oldestOfLocked is the oldest connection under handshake from src, nil
// when none. s.mu is held.
func (s *secureStream) oldestOfLocked(src string) net.Conn {
	var oldest net.Conn
	for c, p := range s.pending {
		if p.source == src && (oldest == nil || p.seq < s.pending[oldest].seq) {
			oldest = c
		}
	}
	return oldest
}

// roomVictimLocked is the connection closed to make room for another
// source's: of those accepted evictionGrace connections or more before,
// the oldest of the source with the most under way. With
// maxPendingHandshakes under way there is one, since at most
// evictionGrace of them are more recent. s.mu is held.
func (s *secureStream) roomVictimLocked() net.Conn {
	var victim net.Conn
	var vp pendingConn
	for c, p := range s.pending {
		if s.seq-p.seq < evictionGrace {
			continue // too recent: its handshake may be about to complete
		}
		if victim == nil {
			victim, vp = c, p
			continue
		}
		n, vn := s.bySource[p.source], s.bySource[vp.source]
		if n > vn || (n == vn && p.seq < vp.seq) {
			victim, vp = c, p
		}
	}
	return victim
}

// evictLocked closes c, a connection under handshake (none when nil); its
// handshake fails, and authenticate ends. s.mu is held.
func (s *secureStream) evictLocked(c net.Conn) {
	if c != nil {
		s.untrackLocked(c)
		_ = c.Close()
	}
}

// isClosed reports whether Close was called: the handshakes it ends are
// not refusals.
func (s *secureStream) isClosed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *secureStream) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.untrackLocked(c)
}

func (s *secureStream) untrackLocked(c net.Conn) {
	p, ok := s.pending[c]
	if !ok {
		return
	}
	delete(s.pending, c)
	if s.bySource[p.source]--; s.bySource[p.source] == 0 {
		delete(s.bySource, p.source)
	}
}

// sourceOf is the IP address c comes from, its whole remote address when
// that has none.
func sourceOf(c net.Conn) string {
	a := c.RemoteAddr()
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if a == nil {
		return ""
	}
	return a.String()
}

// authenticate runs the listener's handshake on c and hands the
// connection to Accept, or closes it.
func (s *secureStream) authenticate(c net.Conn) {
	tc, err := s.handshake(c, s.server, false, s.timeout)
	// Its handshake is over: no longer one to close for another's room.
	// Close still ends the wait for Accept below, through done.
	s.untrack(c)
	if err != nil {
		_ = c.Close()
		if !s.isClosed() {
			s.refusals.refused(c.RemoteAddr(), err)
		}
		if s.refused != nil {
			s.refused(err)
		}
		return
	}
	select {
	case s.accepted <- tc:
	case <-s.done:
		_ = tc.Close()
	}
}

// handshake runs the handshake on c within timeout, and clears the
// deadline after.
func (s *secureStream) handshake(c net.Conn, conf *tls.Config, dial bool, timeout time.Duration) (*tls.Conn, error) {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	tc, err := handshake(c, conf, s.key, dial)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	return tc, nil
}

// Accept returns the next authenticated connection.
func (s *secureStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.accepted:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	case <-s.lisDone:
		return nil, s.lisErr
	}
}

// Dial connects to address and runs the dialler's handshake, both within
// timeout (secureHandshakeTimeout when zero).
func (s *secureStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = secureHandshakeTimeout
	}
	start := time.Now()
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	tc, err := s.handshake(c, s.client, true, timeout-time.Since(start))
	s.dials.note(string(address), err)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// Addr is the address other nodes dial.
func (s *secureStream) Addr() net.Addr { return s.advertise }

// Close closes the listener and the connections still under handshake,
// and waits for the stream's goroutines to end. Connections Accept or
// Dial returned are their caller's to close.
func (s *secureStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.closeErr = s.lis.Close()
		s.mu.Lock()
		s.closed = true
		pending := make([]net.Conn, 0, len(s.pending))
		for c := range s.pending {
			pending = append(pending, c)
		}
		s.mu.Unlock()
		for _, c := range pending {
			_ = c.Close()
		}
		s.wg.Wait()
		// After the handshakes ended: none arms a timer any more.
		s.refusals.stop()
	})
	return s.closeErr
}
