package remote

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
)

// gRPC gives calls a new connection (its picker) before the connection's
// state says ready: for a moment, on a loaded machine for a whole
// append's round trip, a stream is open on a ready connection while
// GetState still says CONNECTING. The sender took that for a connection
// that had left: it drained the client's first stream after its first
// batch, and the next append opened another stream (CI saw the first
// append of a test leave no stream behind). A stream drains only when
// its connection, once seen ready, is no longer.
func TestAppendPipe_StreamIsKeptWhileTheConnectionStateLags(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c, stop := serveInternal(t, e)
	defer stop()
	var state atomic.Int32 // the state gRPC reports, lagging behind
	state.Store(int32(connectivity.Connecting))
	c.pipe.connState = func() connectivity.State { return connectivity.State(state.Load()) }
	current := func() *pipeStream {
		c.pipe.mu.Lock()
		defer c.pipe.mu.Unlock()
		return c.pipe.cur
	}
	appendOne := func() {
		t.Helper()
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}

	appendOne()
	first := current()
	require.NotNil(t, first, "the first stream was drained")
	appendOne()
	assert.Same(t, first, current(), "the first stream was drained")

	// The state catches up, then the connection leaves: the stream drains
	// and the next append goes on a new one.
	state.Store(int32(connectivity.Ready))
	appendOne()
	assert.Same(t, first, current())
	state.Store(int32(connectivity.Idle))
	appendOne()
	// (The state staying IDLE here, the new stream drains after its batch
	// too: current may be nil.)
	assert.NotSame(t, first, current(), "the stream of a connection that left was kept")
	q, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(4), q.Queues[0].MaxOffset)
}

// A stream answered while the state still lagged (CONNECTING), whose
// connection then went (IDLE: the server stopped while the client was
// idle), drains: gRPC reports a connection that went as IDLE or
// TRANSIENT_FAILURE, never as the CONNECTING of the lag, so those states
// mean it left even when the stream never saw the state ready. CI saw
// TestAppendStream_IdleBreakSendsOnANewStream write its next append on
// the dead stream (ErrIndeterminate) when the first answer came during
// the lag.
func TestAppendPipe_StreamDrainsWhenItsConnectionWentBeforeItSawItReady(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, went := range []connectivity.State{connectivity.Idle, connectivity.TransientFailure} {
		c, stop := serveInternal(t, e)
		var state atomic.Int32
		state.Store(int32(connectivity.Connecting))
		c.pipe.connState = func() connectivity.State { return connectivity.State(state.Load()) }
		current := func() *pipeStream {
			c.pipe.mu.Lock()
			defer c.pipe.mu.Unlock()
			return c.pipe.cur
		}
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
		first := current()
		require.NotNil(t, first)
		state.Store(int32(went))
		_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
		assert.NotSame(t, first, current(), "%s: the stream of a connection that went was kept", went)
		stop()
	}
}
