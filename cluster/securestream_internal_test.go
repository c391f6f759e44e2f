package cluster

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testSecret  = []byte("0123456789abcdef-the-cluster-secret")
	otherSecret = []byte("0123456789abcdef-another-one-secret")
)

// secureOnLoopback is a secure stream on a loopback port with secret; its
// refused handshakes go to the channel returned. It closes when the test
// ends.
func secureOnLoopback(t *testing.T, secret []byte) (*secureStream, <-chan error) {
	return secureWithTimeout(t, secret, secureHandshakeTimeout)
}

// secureWithTimeout is secureOnLoopback with the handshake timeout of
// accepted connections.
func secureWithTimeout(t *testing.T, secret []byte, timeout time.Duration) (*secureStream, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := make(chan error, 16)
	s, err := newSecureStream(l, nil, secret, nil, timeout, func(err error) { refused <- err })
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s, refused
}

// acceptOne returns the next connection s accepts, failing the test after
// a minute.
func acceptOne(t *testing.T, s *secureStream) net.Conn {
	t.Helper()
	got := make(chan net.Conn, 1)
	go func() {
		c, err := s.Accept()
		if err == nil {
			got <- c
		}
		close(got)
	}()
	select {
	case c, ok := <-got:
		require.True(t, ok, "Accept failed")
		t.Cleanup(func() { _ = c.Close() })
		return c
	case <-time.After(time.Minute):
		_ = s.Close() // ends the Accept above
		t.Fatal("Accept returned nothing")
		return nil
	}
}

// rawTLS opens a TLS 1.3 connection to s as a dialler would, without any
// proof.
func rawTLS(t *testing.T, s *secureStream) *tls.Conn {
	return rawTLSOffering(t, s, raftProtocol)
}

// rawTLSOffering is rawTLS offering protos by ALPN.
func rawTLSOffering(t *testing.T, s *secureStream, protos ...string) *tls.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.lis.Addr().String())
	require.NoError(t, err)
	tc := tls.Client(c, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: protos})
	t.Cleanup(func() { _ = tc.Close() })
	require.NoError(t, tc.SetDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, tc.Handshake())
	return tc
}

// waitRefused returns the error of the next refused handshake.
func waitRefused(t *testing.T, refused <-chan error) error {
	t.Helper()
	select {
	case err := <-refused:
		return err
	case <-time.After(time.Minute):
		t.Fatal("no handshake was refused")
		return nil
	}
}

// assertClosedByPeer checks that the other end closed c, sending nothing.
func assertClosedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	n, err := c.Read(make([]byte, 64))
	assert.Zero(t, n, "nothing is sent to a peer that did not prove the secret")
	assert.Error(t, err)
	var ne net.Error
	if assert.Error(t, err) && errorsAs(err, &ne) {
		assert.False(t, ne.Timeout(), "the connection is closed, not left open: %v", err)
	}
}

// assertRefusedByPeer checks that the other end refused the proof sent on
// c: it sends its refusal (refusalOn), nothing else, and closes c.
func assertRefusedByPeer(t *testing.T, c *tls.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	want := refusalOn(c)
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the refusal")
	assertClosedByPeer(t, c)
}

func TestNewSecureStream_RefusesAShortSecret(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = NewSecureStream(l, nil, []byte("fifteen bytes!!"))
	require.ErrorIs(t, err, ErrRaftSecretTooShort)
	assert.Contains(t, err.Error(), "16 bytes")
}

// Two ends with the same secret connect, and what one writes the other
// reads.
func TestSecureStream_SameSecretConnects(t *testing.T) {
	a, _ := secureOnLoopback(t, testSecret)
	b, _ := secureOnLoopback(t, testSecret)
	c, err := a.Dial(rAddr(b), time.Minute)
	require.NoError(t, err)
	defer c.Close()
	_, isTLS := c.(*tls.Conn)
	assert.True(t, isTLS, "the connection runs TLS")
	_, err = c.Write([]byte("ping"))
	require.NoError(t, err)
	got := acceptOne(t, b)
	buf := make([]byte, 4)
	_, err = io.ReadFull(got, buf)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(buf))
}

// A dialler with another secret is refused: its Dial fails, and the
// listener closes the connection without handing it to Accept.
func TestSecureStream_WrongSecretIsRefused(t *testing.T) {
	a, _ := secureOnLoopback(t, otherSecret)
	b, refused := secureOnLoopback(t, testSecret)
	_, err := a.Dial(rAddr(b), time.Minute)
	require.ErrorIs(t, err, errRaftProof)
	require.ErrorIs(t, waitRefused(t, refused), errRaftProof)

	// Accept hands over the next peer that proves the secret, not the one
	// refused.
	good, _ := secureOnLoopback(t, testSecret)
	c, err := good.Dial(rAddr(b), time.Minute)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("g"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(acceptOne(t, b), buf)
	require.NoError(t, err)
	assert.Equal(t, "g", string(buf))
}

// A dialler that sends the listener's proof (the right secret, the wrong
// role) is refused.
func TestSecureStream_WrongRoleIsRefused(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)
	tc := rawTLS(t, b)
	p, err := raftProof(b.key, roleListener, tc)
	require.NoError(t, err)
	_, err = tc.Write(p)
	require.NoError(t, err)
	require.ErrorIs(t, waitRefused(t, refused), errRaftProof)
	assertRefusedByPeer(t, tc)
}

// A dialler whose proof stops short is refused.
func TestSecureStream_TruncatedProofIsRefused(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)
	tc := rawTLS(t, b)
	p, err := raftProof(b.key, roleDialler, tc)
	require.NoError(t, err)
	_, err = tc.Write(p[:len(p)/2])
	require.NoError(t, err)
	require.NoError(t, tc.CloseWrite())
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errRaftProof)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assertClosedByPeer(t, tc)
}

// A proof is bound to its TLS session: one that authenticated a session
// is refused on another, whose keying material differs.
func TestSecureStream_ProofReplayedOnAnotherSessionIsRefused(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)

	first := rawTLS(t, b)
	p, err := raftProof(b.key, roleDialler, first)
	require.NoError(t, err)
	_, err = first.Write(p)
	require.NoError(t, err)
	require.NoError(t, checkProof(b.key, roleListener, first), "the proof holds on its own session")
	acceptOne(t, b)

	second := rawTLS(t, b)
	_, err = second.Write(p)
	require.NoError(t, err)
	require.ErrorIs(t, waitRefused(t, refused), errRaftProof)
	assertRefusedByPeer(t, second)
}

// A listener that sends the dialler's own proof back (reflection) does
// not authenticate: Dial fails.
func TestSecureStream_DialRefusesAReflectedProof(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cert, err := ephemeralCert()
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		tc := tls.Server(c, serverConfig(cert))
		p := make([]byte, 32)
		if _, err := io.ReadFull(tc, p); err == nil {
			_, _ = tc.Write(p)
		}
		_, _ = io.Copy(io.Discard, tc)
	}()
	a, _ := secureOnLoopback(t, testSecret)
	_, err = a.Dial(raft.ServerAddress(l.Addr().String()), time.Minute)
	require.ErrorIs(t, err, errRaftProof)
	<-done
}

// A peer that connects and sends nothing does not hold up another: Accept
// hands over the peer that proves the secret while the first one's
// handshake is still under way, and Close ends that handshake.
func TestSecureStream_StalledHandshakeDoesNotBlockAccept(t *testing.T) {
	b, _ := secureWithTimeout(t, testSecret, time.Hour) // the stalled peer stays until Close
	stalled, err := net.Dial("tcp", b.lis.Addr().String())
	require.NoError(t, err)
	defer stalled.Close()
	eventuallyPending := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 1
	}
	require.Eventually(t, eventuallyPending, time.Minute, 5*time.Millisecond, "the stalled connection is accepted")

	a, _ := secureOnLoopback(t, testSecret)
	c, err := a.Dial(rAddr(b), time.Minute)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("r"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(acceptOne(t, b), buf)
	require.NoError(t, err)
	assert.Equal(t, "r", string(buf))
	assert.True(t, eventuallyPending(), "the stalled handshake is still under way")

	require.NoError(t, b.Close())
	assertClosedByPeer(t, stalled)
}

// A handshake that takes longer than the stream's timeout is closed.
func TestSecureStream_SlowHandshakeTimesOut(t *testing.T) {
	b, refused := secureWithTimeout(t, testSecret, 50*time.Millisecond)
	stalled, err := net.Dial("tcp", b.lis.Addr().String())
	require.NoError(t, err)
	defer stalled.Close()
	err = waitRefused(t, refused)
	var ne net.Error
	require.True(t, errorsAs(err, &ne) && ne.Timeout(), "a timeout: %v", err)
	assertClosedByPeer(t, stalled)
}

// Close ends a waiting Accept.
func TestSecureStream_CloseEndsAccept(t *testing.T) {
	b, _ := secureOnLoopback(t, testSecret)
	ended := make(chan error, 1)
	go func() {
		_, err := b.Accept()
		ended <- err
	}()
	require.NoError(t, b.Close())
	select {
	case err := <-ended:
		require.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(time.Minute):
		t.Fatal("Accept still waits after Close")
	}
}

// The proof depends on the secret, the role and the keying material.
func TestProofOf_DependsOnEveryInput(t *testing.T) {
	km := bytes.Repeat([]byte{1}, 32)
	p := proofOf(testSecret, roleDialler, km)
	assert.Len(t, p, 32)
	assert.NotEqual(t, p, proofOf(otherSecret, roleDialler, km))
	assert.NotEqual(t, p, proofOf(testSecret, roleListener, km))
	assert.NotEqual(t, p, proofOf(testSecret, roleDialler, bytes.Repeat([]byte{2}, 32)))
	assert.Equal(t, p, proofOf(testSecret, roleDialler, km))
}

// rAddr is the address to dial s at.
func rAddr(s *secureStream) raft.ServerAddress { return raft.ServerAddress(s.Addr().String()) }

func errorsAs(err error, target any) bool { return errors.As(err, target) }
