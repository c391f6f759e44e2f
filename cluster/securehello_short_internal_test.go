package cluster

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A peer that sets TLS up with this version's protocol, sends fewer bytes
// than a hello's header and closes (a scanner) is refused as a malformed
// hello, and logged so. A node writes its hello in one TLS record, which
// arrives whole or not at all, so part of a header comes from no node.
// Before, it was logged as a failed handshake.
func TestSecureStream_ShortHelloClosedIsMalformed(t *testing.T) {
	h := newLoggedRecords()
	b, refused := secureOnLoopback(t, testSecret)
	b.setLogger(loggedOn(h))

	tc := rawTLS(t, b)
	_, err := tc.Write([]byte(raftHelloMagic[:3]))
	require.NoError(t, err)
	require.NoError(t, tc.CloseWrite())
	err = waitRefused(t, refused)
	require.ErrorIs(t, err, errMalformedHello)
	assert.NotErrorIs(t, err, errWrongProof)
	assertClosedByPeer(t, tc)
	line := h.find("WARN", "reason=malformed hello")
	require.NotEmpty(t, line, "the refusal is logged as a malformed hello: %v", h.lines())
	assert.Contains(t, line, "remote="+tc.LocalAddr().String())
	assert.Contains(t, line, "3 of 7 bytes", "the line says how short the hello was")
}

// A peer that sends part of a header and then nothing until the
// handshake's deadline is refused as a malformed hello too, not as a
// timeout: the deadline is that of the connection the hello is read
// from, here a reader that says so after the partial header.
func TestReadHello_PartHeaderThenDeadlineIsMalformed(t *testing.T) {
	_, _, err := readHello(io.MultiReader(bytes.NewReader([]byte("EQR")), timeoutReader{}))
	require.ErrorIs(t, err, errMalformedHello)
	assert.Equal(t, reasonMalformed, refusalReason(err), "%v", err)
	assert.ErrorContains(t, err, "3 of 7 bytes")
}

// A peer that sends nothing of a hello keeps the reasons it had: a
// timeout, or a failed handshake when it closes.
func TestReadHello_NothingSentIsNoMalformedHello(t *testing.T) {
	_, _, err := readHello(timeoutReader{})
	assert.Equal(t, reasonTimeout, refusalReason(err), "%v", err)
	_, _, err = readHello(bytes.NewReader(nil))
	assert.Equal(t, reasonOther, refusalReason(err), "%v", err)
}

// timeoutReader fails every read as a connection whose deadline passed.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) { return 0, timeoutError{} }
