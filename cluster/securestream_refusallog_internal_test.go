package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loggedOn returns a logger whose records h keeps.
func loggedOn(h loggedRecords) *slog.Logger { return slog.New(h) }

// countOf is how many records h kept whose line holds every part.
func (h loggedRecords) countOf(parts ...string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
next:
	for _, l := range *h.logs {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		n++
	}
	return n
}

// lines are the records h kept.
func (h loggedRecords) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), *h.logs...)
}

// The listener logs each refused handshake at warn, with the dialler's
// address and the reason: a wrong secret, another version of the
// handshake, a timeout.
func TestSecureStream_RefusedHandshakesAreLogged(t *testing.T) {
	h := newLoggedRecords()
	b, refused := secureOnLoopback(t, testSecret)
	b.setLogger(loggedOn(h))

	a, _ := secureOnLoopback(t, otherSecret)
	_, err := a.Dial(rAddr(b), time.Minute)
	require.ErrorIs(t, err, errRaftProof)
	require.ErrorIs(t, waitRefused(t, refused), errRaftProof)
	line := h.find("WARN", "reason=wrong secret")
	require.NotEmpty(t, line, "the refusal is logged: %v", h.lines())
	assert.Contains(t, line, "remote=127.0.0.1:")

	old := rawTLSOffering(t, b) // no ALPN: the first version
	_, err = old.Write(make([]byte, 32))
	require.NoError(t, err)
	require.ErrorIs(t, waitRefused(t, refused), errRaftVersion)
	line = h.find("WARN", "reason=bad version")
	require.NotEmpty(t, line, "the refusal is logged: %v", h.lines())
	assert.Contains(t, line, "remote="+old.LocalAddr().String())

	slow, slowRefused := secureWithTimeout(t, testSecret, 50*time.Millisecond)
	slow.setLogger(loggedOn(h))
	stalled, err := net.Dial("tcp", slow.lis.Addr().String())
	require.NoError(t, err)
	defer stalled.Close()
	waitRefused(t, slowRefused)
	line = h.find("WARN", "reason=timeout")
	require.NotEmpty(t, line, "the refusal is logged: %v", h.lines())
	assert.Contains(t, line, "remote="+stalled.LocalAddr().String())
}

// A peer refused again and again does not flood the log: at most
// refusalBurst lines of a reason a window, the first of that reason in
// the next window saying how many were left out.
func TestRefusalLog_IsRateLimited(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242}
	for range refusalBurst + 5 {
		r.refused(addr, errWrongProof)
	}
	assert.Equal(t, refusalBurst, h.countOf("WARN", "reason=wrong secret", "remote=192.0.2.7:4242"))
	now = now.Add(refusalWindow)
	r.refused(addr, fmt.Errorf("read: %w", errors.Join(errRaftProof, net.ErrClosed)))
	assert.Zero(t, h.countOf("WARN", "suppressed="), "another reason's line says nothing of those: %v", h.lines())
	r.refused(addr, errWrongProof)
	assert.Equal(t, 1, h.countOf("WARN", "reason=wrong secret", "suppressed=5"), "%v", h.lines())
}

// Each refusal has the reason an operator acts on.
func TestRefusalReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errWrongProof, "wrong secret"},
		{errRaftVersion, "bad version"},
		{fmt.Errorf("%w: magic", errMalformedHello), "malformed hello"},
		{errWrongBareProof, "unverified bare proof"},
		{fmt.Errorf("%w: %w", errRaftProof, timeoutError{}), "timeout"},
		{timeoutError{}, "timeout"},
		{fmt.Errorf("%w: %w", errRaftProof, net.ErrClosed), "failed handshake"},
		{errors.New("tls: first record does not look like a TLS handshake"), "failed handshake"},
	} {
		assert.Equal(t, tc.want, refusalReason(tc.err), "%v", tc.err)
	}
}

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
