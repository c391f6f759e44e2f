package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A refusal past the bound that lands in a window after the window's
// timer said its sum (the timer ran at the window's end by its own
// clock while the refusal read the time just before, or the clock is
// behind the timer) adds no line to the window: it is counted with the
// lines left out, said with the next line logged. A window then logs at
// most refusalBurst+refusalAddresses lines and one sum, exactly. Before,
// such a refusal armed a new timer for the same window, which said a
// second sum: a 112th line.
func TestRefusalLog_RefusalAfterTheWindowsSumAddsNoLine(t *testing.T) {
	h := newLoggedRecords()
	r := newRefusalLog()
	r.setLogger(loggedOn(h))
	timers := holdTimers(r)
	now := time.Unix(1_000_000, 0)
	r.now = func() time.Time { return now }
	bound := refusalBurst + refusalAddresses
	const past = 5
	for i := range bound + past {
		r.refused(&net.TCPAddr{IP: net.IPv4(10, 2, byte(i/256), byte(i%256)), Port: 5000}, errWrongProof)
	}
	require.Equal(t, 1, timers.fire(), "one timer for the window's end")
	require.Equal(t, 1, h.countOf("more addresses"), "%v", h.lines())
	require.Len(t, h.lines(), bound+1)

	// Refusals of the same window, after its sum: new addresses, and
	// one already summed up.
	late := []*net.TCPAddr{
		{IP: net.IPv4(10, 3, 0, 1), Port: 5000},
		{IP: net.IPv4(10, 3, 0, 2), Port: 5000},
		{IP: net.IPv4(10, 2, byte(bound/256), byte(bound%256)), Port: 5001},
	}
	for _, a := range late {
		r.refused(a, errWrongProof)
	}
	timers.fire()
	assert.Len(t, h.lines(), bound+1, "a window logs at most %d lines and its sum: %v", bound, h.lines())
	assert.Equal(t, 1, h.countOf("more addresses"), "one sum a window: %v", h.lines())

	// The next window's first line says how many were left out since
	// the last line logged, the late ones too; no sum of them follows.
	now = now.Add(refusalWindow)
	r.refused(&net.TCPAddr{IP: net.IPv4(10, 3, 0, 1), Port: 5002}, errWrongProof)
	assert.Equal(t, 1, h.countOf("remote=10.3.0.1:5002", "suppressed=8"), "%v", h.lines())
	assert.Equal(t, 0, timers.fire(), "nothing past the bound in the new window")
	assert.Equal(t, 1, h.countOf("more addresses"), "%v", h.lines())
	assert.Len(t, h.lines(), bound+2)
}
