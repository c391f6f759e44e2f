package cluster

import (
	"crypto/rand"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A peer that sets TLS up with this version's protocol and then sends
// bytes that are no hello (a scanner, another protocol, a corrupted
// stream) is refused as a malformed hello, not as a node with another
// secret: a flood of them does not use the wrong secret's lines of the
// log.
func TestSecureStream_RandomBytesAreAMalformedHello(t *testing.T) {
	h := newLoggedRecords()
	b, refused := secureOnLoopback(t, testSecret)
	b.setLogger(loggedOn(h))

	tc := rawTLS(t, b)
	junk := make([]byte, 32)
	_, err := rand.Read(junk)
	require.NoError(t, err)
	junk[0] = 'x' // never the hello's magic
	_, err = tc.Write(junk)
	require.NoError(t, err)
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errMalformedHello)
	assert.NotErrorIs(t, err, errWrongProof)
	assertClosedByPeer(t, tc)
	line := h.find("WARN", "reason=malformed hello")
	require.NotEmpty(t, line, "the refusal is logged as a malformed hello: %v", h.lines())
	assert.Contains(t, line, "remote="+tc.LocalAddr().String())
	assert.Zero(t, h.countOf("reason=wrong secret"), "%v", h.lines())
}

// Each field of the hello is checked: a hello with another magic,
// version, kind or length is malformed.
func TestSecureStream_HelloFieldsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h []byte)
	}{
		{"magic", func(h []byte) { h[0] ^= 0xff }},
		{"version", func(h []byte) { h[len(raftHelloMagic)] = 9 }},
		{"kind", func(h []byte) { h[len(raftHelloMagic)+1] = 'Z' }},
		{"length", func(h []byte) { h[len(raftHelloMagic)+2] = 31 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, refused := secureOnLoopback(t, testSecret)
			c := rawTLS(t, b)
			p, err := raftProof(b.key, roleDialler, c)
			require.NoError(t, err)
			tc.edit(p)
			_, err = c.Write(p)
			require.NoError(t, err)
			require.ErrorIs(t, waitRefused(t, refused), errMalformedHello)
			assertClosedByPeer(t, c)
		})
	}
}

// A well-formed hello whose proof does not verify is a node with another
// secret (or salt): it is refused as such, logged as a wrong secret, and
// told so.
func TestSecureStream_WellFormedWrongProofIsAWrongSecret(t *testing.T) {
	h := newLoggedRecords()
	b, refused := secureOnLoopback(t, testSecret)
	b.setLogger(loggedOn(h))
	otherKey, err := raftProofKey(otherSecret, nil)
	require.NoError(t, err)

	tc := rawTLS(t, b)
	p, err := raftProof(otherKey, roleDialler, tc)
	require.NoError(t, err)
	_, err = tc.Write(p)
	require.NoError(t, err)
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errWrongProof)
	assert.NotErrorIs(t, err, errMalformedHello)
	assertRefusedByPeer(t, tc)
	line := h.find("WARN", "reason=wrong secret")
	require.NotEmpty(t, line, "%v", h.lines())
	assert.Contains(t, line, "remote="+tc.LocalAddr().String())
	assert.Zero(t, h.countOf("reason=malformed hello"), "%v", h.lines())
}

// A node of the version before hellos (it offers only equeue-raft/2 and
// sends bare proofs) and a node of this version connect either way with
// the same secret; a bare proof that does not verify is logged under a
// reason of its own, since it cannot be told from random bytes.
func TestSecureStream_BareProofVersionInteroperates(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)

	// An old dialler to this listener.
	old := rawTLSOffering(t, b, raftProtocolV2)
	require.Equal(t, raftProtocolV2, old.ConnectionState().NegotiatedProtocol)
	require.NoError(t, proveDialler(b.key, old))
	acceptOne(t, b)

	// An old listener to this dialler.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	cert, err := ephemeralCert()
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		tc, err := handshake(c, serverConfigOf(cert, raftProtocolV2), b.key, false)
		if err == nil && tc.ConnectionState().NegotiatedProtocol != raftProtocolV2 {
			err = errRaftVersion
		}
		served <- err
	}()
	a, _ := secureOnLoopback(t, testSecret)
	c, err := a.Dial(raft.ServerAddress(l.Addr().String()), time.Minute)
	require.NoError(t, err)
	_ = c.Close()
	require.NoError(t, <-served)

	// An old dialler with another secret: refused, told so, and logged
	// under the bare proof's reason.
	h := newLoggedRecords()
	b.setLogger(loggedOn(h))
	otherKey, err := raftProofKey(otherSecret, nil)
	require.NoError(t, err)
	wrong := rawTLSOffering(t, b, raftProtocolV2)
	require.ErrorIs(t, proveDialler(otherKey, wrong), errProofRefused)
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errWrongProof)
	assert.NotEmpty(t, h.find("WARN", "reason=unverified bare proof"), "%v", h.lines())
	assert.Zero(t, h.countOf("reason=wrong secret"), "%v", h.lines())
}
