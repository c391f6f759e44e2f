package cluster

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flood of connections that send nothing holds at most
// maxPendingHandshakes handshakes under way: each one past the bound
// closes the oldest at once, not after the handshake timeout, and a peer
// that proves the secret still gets through.
func TestSecureStream_IdleFloodIsBoundedAndDoesNotStopAPeer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// An hour: no flooding connection ends by the timeout during the test.
	b, err := newSecureStream(l, nil, testSecret, nil, time.Hour, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })

	const extra = 8
	flood := make([]net.Conn, maxPendingHandshakes+extra)
	for i := range flood {
		c, err := net.Dial("tcp", b.lis.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		flood[i] = c
	}
	pending := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending)
	}
	// Every flooding connection is accepted, then held or closed.
	closed := make(chan int, len(flood))
	for i, c := range flood {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			if _, err := c.Read(make([]byte, 1)); err == io.EOF {
				closed <- i
			}
		}()
	}
	for range extra {
		select {
		case <-closed:
		case <-time.After(time.Minute):
			t.Fatalf("the listener closed fewer than %d of %d idle connections; %d handshakes under way", extra, len(flood), pending())
		}
	}
	assert.LessOrEqual(t, pending(), maxPendingHandshakes)

	a, _ := secureOnLoopback(t, testSecret)
	c, err := a.Dial(rAddr(b), time.Minute)
	require.NoError(t, err, "a peer with the secret connects despite the flood")
	defer c.Close()
	_, err = c.Write([]byte("r"))
	require.NoError(t, err)
	buf := make([]byte, 1)
	_, err = io.ReadFull(acceptOne(t, b), buf)
	require.NoError(t, err)
	assert.Equal(t, "r", string(buf))
	assert.LessOrEqual(t, pending(), maxPendingHandshakes)
}
