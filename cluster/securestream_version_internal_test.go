package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raftProofLabelV1 is the label of the first version of the handshake,
// whose proofs were HMACs keyed with the secret itself.
const raftProofLabelV1 = "equeue raft v1"

// rawHMACProof is a proof of the first version's form: HMAC-SHA256 keyed
// with the raw secret, over label, role and the keying material the TLS
// session exports under label.
func rawHMACProof(t *testing.T, secret []byte, label, role string, cs tls.ConnectionState) []byte {
	t.Helper()
	km, err := cs.ExportKeyingMaterial(label, nil, sha256.Size)
	require.NoError(t, err)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write([]byte(role))
	m.Write(km)
	return m.Sum(nil)
}

// fakeListener accepts one connection on a loopback port, runs TLS on it
// with conf, and hands the session's state and the hello the dialler
// sent (its first raftHelloHeaderLen+proofLen bytes) (none when it sent none) to serve, whose answer it writes
// back before closing the connection.
func fakeListener(t *testing.T, conf *tls.Config, serve func(cs tls.ConnectionState, proof []byte) []byte) raft.ServerAddress {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = l.Close()
		<-done
	})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		tc := tls.Server(c, conf)
		if tc.Handshake() != nil {
			return
		}
		p := make([]byte, raftHelloHeaderLen+proofLen)
		n, _ := io.ReadFull(tc, p)
		if answer := serve(tc.ConnectionState(), p[:n]); answer != nil {
			_, _ = tc.Write(answer)
		}
	}()
	return raft.ServerAddress(l.Addr().String())
}

// A dialler's proof is no HMAC keyed with the secret itself, under either
// version's label: whoever a node dials learns nothing it can test a
// guessed secret against with one HMAC per guess.
func TestSecureStream_ProofIsNotKeyedWithTheRawSecret(t *testing.T) {
	b, _ := secureOnLoopback(t, testSecret)
	got := make(chan []byte, 1)
	var state tls.ConnectionState
	addr := fakeListener(t, b.server, func(cs tls.ConnectionState, proof []byte) []byte {
		state = cs
		got <- proof
		return nil
	})
	a, _ := secureOnLoopback(t, testSecret)
	_, err := a.Dial(addr, time.Minute)
	require.Error(t, err, "the fake listener proves nothing")
	hello := <-got
	require.Len(t, hello, raftHelloHeaderLen+proofLen, "the dialler proves first")
	assert.Equal(t, helloOf(helloProof, nil)[:raftHelloHeaderLen-1], hello[:raftHelloHeaderLen-1], "the hello's header")
	proof := hello[raftHelloHeaderLen:]
	for _, label := range []string{raftProofLabelV1, raftProofLabel} {
		assert.NotEqual(t, rawHMACProof(t, testSecret, label, roleDialler, state), proof,
			"the proof is an HMAC keyed with the raw secret (label %q)", label)
	}
	// It is keyed with what PBKDF2 derives from the secret, as the
	// listener, with the same secret, expects.
	key, err := raftProofKey(testSecret, nil)
	require.NoError(t, err)
	assert.Equal(t, b.key, key)
	km, err := state.ExportKeyingMaterial(raftProofLabel, nil, sha256.Size)
	require.NoError(t, err)
	assert.Equal(t, proofOf(key, roleDialler, km), proof)
	assert.NotEqual(t, testSecret, key)
}

// A dialler of the first version (no ALPN, a proof keyed with the raw
// secret) is refused as one of another version, not taken, and before the
// listener sends anything.
func TestSecureStream_FirstVersionDiallerIsRefusedAsAnotherVersion(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)
	tc := rawTLSOffering(t, b)
	_, err := tc.Write(rawHMACProof(t, testSecret, raftProofLabelV1, roleDialler, tc.ConnectionState()))
	require.NoError(t, err)
	assertClosedByPeer(t, tc)
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errRaftVersion)
	assert.Contains(t, err.Error(), "version")
}

// A dialler that offers only a later version's protocol is refused as one
// of another version.
func TestSecureStream_LaterVersionDiallerIsRefusedAsAnotherVersion(t *testing.T) {
	b, refused := secureOnLoopback(t, testSecret)
	tc := rawTLSOffering(t, b, "equeue-raft/99") // TLS itself is set up: the version is refused with an error of its own
	assertClosedByPeer(t, tc)
	require.ErrorIs(t, waitRefused(t, refused), errRaftVersion)
}

// Dial to a listener of the first version fails at once with an error
// that says so, and sends it no proof.
func TestSecureStream_DialToAFirstVersionListenerFailsAsAnotherVersion(t *testing.T) {
	cert, err := ephemeralCert()
	require.NoError(t, err)
	sent := make(chan []byte, 1)
	addr := fakeListener(t, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}},
		func(cs tls.ConnectionState, proof []byte) []byte {
			sent <- proof
			if !hmac.Equal(proof, rawHMACProof(t, testSecret, raftProofLabelV1, roleDialler, cs)) {
				return nil
			}
			return rawHMACProof(t, testSecret, raftProofLabelV1, roleListener, cs)
		})
	a, _ := secureOnLoopback(t, testSecret)
	c, err := a.Dial(addr, time.Minute)
	if c != nil {
		_ = c.Close()
	}
	require.ErrorIs(t, err, errRaftVersion)
	assert.Empty(t, <-sent, "no proof is sent to a listener of another version")
}
