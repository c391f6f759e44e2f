package cluster

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Dial whose handshake the other end refuses (another secret) is
// remembered for its address, from the time it failed; a Dial that
// succeeds there forgets it; one to an address that does not answer is
// no refusal of the handshake.
func TestSecureStream_DialRemembersARefusedHandshake(t *testing.T) {
	a, _ := secureOnLoopback(t, testSecret)
	wrong, _ := secureOnLoopback(t, otherSecret)
	before := time.Now()
	_, err := a.Dial(rAddr(wrong), time.Minute)
	require.ErrorIs(t, err, errProofRefused, "the listener says it refused the proof")
	got := a.authFailure(string(rAddr(wrong)), before)
	require.ErrorIs(t, got, errProofRefused)
	assert.NoError(t, a.authFailure(string(rAddr(wrong)), time.Now().Add(time.Hour)), "a refusal before the time asked about")

	// The same address, now with the secret: the refusal is forgotten.
	require.NoError(t, wrong.Close())
	l, err := net.Listen("tcp", string(rAddr(wrong)))
	require.NoError(t, err)
	right, err := newSecureStream(l, nil, testSecret, nil, secureHandshakeTimeout, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = right.Close() })
	c, err := a.Dial(rAddr(right), time.Minute)
	require.NoError(t, err)
	_ = c.Close()
	assert.NoError(t, a.authFailure(string(rAddr(right)), before))

	// Nothing listens: no handshake was refused.
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := gone.Addr().String()
	require.NoError(t, gone.Close())
	_, err = a.Dial(raft.ServerAddress(addr), time.Minute)
	require.Error(t, err)
	assert.NoError(t, a.authFailure(addr, before))
}

// A listener that closes the connection once the dialler proved, without
// refusing the proof (closing for room, or as its node stops), is no
// refusal of the handshake: AddVoter must not say the node holds another
// secret.
func TestSecureStream_DialClosedMidProofIsNoRefusal(t *testing.T) {
	b, _ := secureOnLoopback(t, testSecret)
	proved := make(chan []byte, 1)
	addr := fakeListener(t, b.server, func(_ tls.ConnectionState, proof []byte) []byte {
		proved <- proof
		return nil // closed without a word
	})
	a, _ := secureOnLoopback(t, testSecret)
	before := time.Now()
	_, err := a.Dial(addr, time.Minute)
	require.ErrorIs(t, err, errRaftProof)
	require.Len(t, <-proved, raftHelloHeaderLen+proofLen, "the dialler proved")
	assert.NoError(t, a.authFailure(string(addr), before), "a connection closed mid-proof is taken for a refusal")
}
