package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flood of connections that are not equeue nodes must not hide, in the
// same window of the rate limit, the one line an operator acts on: a node
// that holds another secret. Each reason has its own lines a window.
// Before, the flood used the window's lines, and the wrong secret was
// left out.
func TestSecureStream_FloodDoesNotHideAWrongSecret(t *testing.T) {
	h := newLoggedRecords()
	b, refused := secureOnLoopback(t, testSecret)
	now := time.Unix(1_000_000, 0) // one window for the whole test
	b.refusals.now = func() time.Time { return now }
	b.setLogger(loggedOn(h))

	flood := 3 * refusalBurst
	for range flood {
		c, err := net.Dial("tcp", b.lis.Addr().String())
		require.NoError(t, err)
		_, err = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		require.NoError(t, err)
		require.Error(t, waitRefused(t, refused))
		_ = c.Close()
	}
	require.Equal(t, refusalBurst, h.countOf("WARN", "reason=failed handshake"), "the flood is rate-limited: %v", h.lines())

	a, _ := secureOnLoopback(t, otherSecret)
	_, err := a.Dial(rAddr(b), time.Minute)
	require.ErrorIs(t, err, errRaftProof)
	require.ErrorIs(t, waitRefused(t, refused), errWrongProof)
	assert.NotEmpty(t, h.find("WARN", "reason=wrong secret", "remote=127.0.0.1:"), "the wrong secret is logged: %v", h.lines())

	// The next window's first line of the flood's reason says how many
	// of that reason were left out.
	now = now.Add(refusalWindow)
	b.refusals.refused(&net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242}, net.ErrClosed)
	assert.Equal(t, 1, h.countOf("WARN", "reason=failed handshake", "suppressed=20"), "%v", h.lines())
}
