package kafka

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestConn_SlowFrameBodyIsCutOff: a client that sends a frame's size and
// part of its body, then stops, holds that size of MaxQueuedRequestBytes
// only until RequestReadTimeout: the listener then closes its connection
// and gives the bytes back, so another connection's request, which waited
// for them, is read and answered.
func TestConn_SlowFrameBodyIsCutOff(t *testing.T) {
	const pad = 40 << 10
	s := inflateServer(t, 1, &Options{MaxQueuedRequestBytes: 64 << 10, RequestReadTimeout: 200 * time.Millisecond})
	addr := listen(t, s)

	slow := dial(t, addr)
	frame := paddedVersions(1, pad)
	_, err := slow.Write(frame[:len(frame)/2])
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s.queued.mu.Lock()
		defer s.queued.mu.Unlock()
		return s.queued.free < s.queued.budget
	}, time.Minute, time.Millisecond, "the slow frame reserved its size")

	other := dial(t, addr)
	_, err = other.Write(paddedVersions(2, pad))
	require.NoError(t, err)

	_, err = answer(slow)
	require.Error(t, err, "the stalled connection is closed by the server")
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "the server closed the stalled connection before the test's minute ran out")
	got, err := answer(other)
	require.NoError(t, err, "the other connection's request is answered once the stalled one gave its bytes back")
	assert.Equal(t, int32(2), got)
}

// TestNewServer_RequestReadTimeout: a negative RequestReadTimeout is
// refused.
func TestNewServer_RequestReadTimeout(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = NewServer(e, &Options{RequestReadTimeout: -time.Second})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}
