package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestConn_TruncatedAndGarbledRequests: every version of every request
// of contentRequests, cut short (at every length of its first bytes, then
// at lengths spread over the rest) and with bytes of its body flipped, is
// answered or closes its connection, never panics: a panic here would
// take down the host process of an embedded broker (handle is called
// without the connection's recovery). Every test run checks this, which
// FuzzConn_AnyRequest only reaches when fuzzed.
func TestConn_TruncatedAndGarbledRequests(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true, AutoCreateTopics: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	try := func(name string, frame []byte) {
		c := newConn(s, discardConn{})
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Millisecond)
		defer cancel()
		defer c.cancel()
		c.ctx = ctx
		require.NotPanics(t, func() { _ = c.handle(frame) }, name)
	}
	for _, req := range contentRequests() {
		v := supported[req.Key()]
		for version := v.min; version <= v.max; version++ {
			req.SetVersion(version)
			frame := requestFrame(req, 1)
			name := kmsg.NameForKey(req.Key())
			// Cuts at every length of the header and the body's start
			// (lengths, counts, names), then spread over the rest.
			for n := 0; n < len(frame); n += max(1, min(n/64, len(frame)/128)) {
				try(name+" cut", frame[:n])
			}
			// Flips of the body's bytes (past the 14-byte header): each
			// turns a length, a count or a value into garbage.
			for i := 14; i < len(frame); i += max(1, len(frame)/64) {
				g := append([]byte(nil), frame...)
				g[i] ^= 0xff
				try(name+" flipped", g)
			}
		}
	}
}
