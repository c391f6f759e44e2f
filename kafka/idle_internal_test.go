package kafka

import (
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestConn_IdleConnectionIsClosed: a connection that sends no request for
// ConnectionsMaxIdle is closed by the listener, as Kafka closes one past
// connections.max.idle.ms, so the client reads EOF (and not its own
// minute-long read deadline).
func TestConn_IdleConnectionIsClosed(t *testing.T) {
	s := inflateServer(t, 1, &Options{ConnectionsMaxIdle: 200 * time.Millisecond})
	addr := listen(t, s)

	nc := dial(t, addr)
	require.NoError(t, roundTrip(nc, 1), "a new connection is served")
	_, err := answer(nc)
	require.ErrorIs(t, err, io.EOF, "the idle connection is closed by the server")
}

// TestConn_BusyConnectionIsNotIdle: a connection that sends a request
// more often than ConnectionsMaxIdle stays open past that bound from its
// start: the idle bound counts from the last request, not from the
// connection's start. The bound is far longer than the pause between two
// requests, and than any stall of a loaded machine, so that only a bound
// counted from the start closes the connection.
func TestConn_BusyConnectionIsNotIdle(t *testing.T) {
	const idle = 5 * time.Second
	s := inflateServer(t, 1, &Options{ConnectionsMaxIdle: idle})
	addr := listen(t, s)

	nc := dial(t, addr)
	start := time.Now()
	i := int32(1)
	for ; time.Since(start) <= idle; i++ {
		require.NoError(t, roundTrip(nc, i), "request %d on a busy connection", i)
		time.Sleep(idle / 50)
	}
	// Older than the bound now, the connection is still served.
	require.NoError(t, roundTrip(nc, i), "request %d, after the connection outlived ConnectionsMaxIdle", i)
}

// TestConn_UnreadResponseIsCutOff: a client that pipelines requests and
// never reads their answers makes the listener's write block once the
// socket buffers are full; the write is bounded by RequestReadTimeout,
// so the connection is closed and its request's bytes of
// MaxQueuedRequestBytes given back. With a budget of one byte every frame
// waits for all of it, so the other connection's request is answered only
// once the stuck one gave it back.
func TestConn_UnreadResponseIsCutOff(t *testing.T) {
	s := inflateServer(t, 1, &Options{MaxQueuedRequestBytes: 1, RequestReadTimeout: 200 * time.Millisecond})
	addr := listen(t, s)

	stuck := dial(t, addr)
	if tc, ok := stuck.(interface{ SetReadBuffer(int) error }); ok {
		require.NoError(t, tc.SetReadBuffer(4<<10))
	}
	// About 64 bytes a request and several hundred an answer: far more
	// answers than the socket buffers hold.
	frames := make([]byte, 0, 40000*64)
	for i := range int32(40000) {
		frames = append(frames, paddedVersions(i, 0)...)
	}
	var handled atomic.Int64
	s.handling = func() { handled.Add(1) }
	go func() { _, _ = stuck.Write(frames) }() // ends when the server closes the connection
	// The listener is stuck writing (or already gave up) once it handles
	// no more requests over several polls.
	last, still := int64(-1), 0
	require.Eventually(t, func() bool {
		n := handled.Load()
		if n > 0 && n == last {
			still++
		} else {
			last, still = n, 0
		}
		return still == 5
	}, time.Minute, 20*time.Millisecond, "the stuck connection's requests stop being handled")
	require.Less(t, last, int64(40000), "the listener stopped before handling every request")

	other := dial(t, addr)
	_, err := other.Write(paddedVersions(-1, 0))
	require.NoError(t, err)
	got, err := answer(other)
	require.NoError(t, err, "the other connection's request is answered once the stuck one gave its bytes back")
	assert.Equal(t, int32(-1), got)
}

// TestNewServer_ConnectionsMaxIdle: a negative ConnectionsMaxIdle is
// refused.
func TestNewServer_ConnectionsMaxIdle(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = NewServer(e, &Options{ConnectionsMaxIdle: -time.Second})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}
