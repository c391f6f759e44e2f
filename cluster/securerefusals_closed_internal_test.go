package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A window-end timer armed by a flood from more addresses than a window
// names, that fires once the stream is closed (its node closed), logs
// nothing: Close waits for the stream's goroutines, and no line of its
// refusals comes after it. Before, the timer, never stopped, logged the
// window's summary up to refusalWindow after Close.
func TestRefusalLog_WindowEndTimerAfterCloseLogsNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := newSecureStream(l, nil, testSecret, nil, time.Hour, nil)
	require.NoError(t, err)
	h := newLoggedRecords()
	s.setLogger(loggedOn(h))
	timers := holdTimers(s.refusals)
	now := time.Unix(1_000_000, 0) // one window for the whole test
	s.refusals.now = func() time.Time { return now }
	for i := range refusalBurst + refusalAddresses + 3 {
		s.refusals.refused(&net.TCPAddr{IP: net.IPv4(192, 0, 2, byte(i%256)), Port: 6000 + i/256}, errWrongProof)
	}
	named := h.countOf("cluster: refused a Raft connection")
	require.Equal(t, refusalBurst+refusalAddresses, named)

	require.NoError(t, s.Close())
	assert.Equal(t, 1, timers.fire(), "the flood armed one window-end timer")
	assert.Empty(t, h.find("more addresses"), "no summary line after Close")
	assert.Len(t, h.lines(), named, "no line at all after Close")
}
