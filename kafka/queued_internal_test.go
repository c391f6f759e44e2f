package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// listen serves s on a loopback listener and returns its address.
func listen(t *testing.T, s *Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(lis) }()
	return lis.Addr().String()
}

// paddedVersions is a whole ApiVersions v3 request frame, size included,
// whose header carries a tagged field of pad bytes: a frame of any size
// the listener reads whole and answers.
func paddedVersions(correlation int32, pad int) []byte {
	b := make([]byte, 4, 64+pad)
	b = binary.BigEndian.AppendUint16(b, uint16(apiVersionsKey))
	b = binary.BigEndian.AppendUint16(b, 3)
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	b = binary.AppendUvarint(b, 1) // one header tag
	b = binary.AppendUvarint(b, 0) // its id
	b = binary.AppendUvarint(b, uint64(pad))
	b = append(b, make([]byte, pad)...)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// dial connects to addr, closed when the test ends; its reads give up
// after a minute, so that a test waiting for an answer that never comes
// fails rather than hangs.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(time.Minute)))
	return nc
}

// answer reads one response frame from nc and returns its correlation ID.
func answer(nc net.Conn) (int32, error) {
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return 0, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		return 0, err
	}
	return int32(binary.BigEndian.Uint32(b)), nil
}

// roundTrip sends an ApiVersions request on nc and reads its answer.
func roundTrip(nc net.Conn, correlation int32) error {
	if _, err := nc.Write(paddedVersions(correlation, 0)); err != nil {
		return err
	}
	got, err := answer(nc)
	if err == nil && got != correlation {
		return io.ErrUnexpectedEOF
	}
	return err
}

// signal is a channel closed once, by the first of its fire calls.
type signal struct {
	once sync.Once
	c    chan struct{}
}

func newSignal() *signal { return &signal{c: make(chan struct{})} }

func (s *signal) fire() { s.once.Do(func() { close(s.c) }) }

// TestConn_QueuedRequestBytesAreBounded: request frames read and not yet
// answered hold their size of the listener's MaxQueuedRequestBytes, over
// every connection, so a second connection's 800 KiB frame is not read
// (its body not allocated) while the first connection's 800 KiB request,
// of a 1 MiB budget, is being handled; it is read and answered once the
// first was answered, and the budget is whole again after.
func TestConn_QueuedRequestBytesAreBounded(t *testing.T) {
	const pad = 800 << 10
	s := inflateServer(t, 1, &Options{MaxQueuedRequestBytes: 1 << 20})
	var calls atomic.Int32
	first, early, waiting := newSignal(), newSignal(), newSignal()
	release := make(chan struct{})
	s.handling = func() {
		switch calls.Add(1) {
		case 1:
			first.fire()
			<-release
		default:
			select {
			case <-release:
			default:
				early.fire()
			}
		}
	}
	s.queued.waiting = waiting.fire
	addr := listen(t, s)

	a := dial(t, addr)
	_, err := a.Write(paddedVersions(1, pad))
	require.NoError(t, err)
	select {
	case <-first.c:
	case <-time.After(time.Minute):
		t.Fatal("the first request was not handled")
	}

	b := dial(t, addr)
	_, err = b.Write(paddedVersions(2, pad))
	require.NoError(t, err)
	select {
	case <-waiting.c:
	case <-early.c:
		close(release)
		t.Fatal("the second 800 KiB frame was read and handled while the first held 800 KiB of the 1 MiB budget")
	case <-time.After(time.Minute):
		t.Fatal("the second frame neither waited for the budget nor was handled")
	}

	close(release)
	got, err := answer(a)
	require.NoError(t, err)
	assert.Equal(t, int32(1), got)
	got, err = answer(b)
	require.NoError(t, err, "the second request is read and answered once the first was")
	assert.Equal(t, int32(2), got)
	require.Eventually(t, func() bool {
		s.queued.mu.Lock()
		defer s.queued.mu.Unlock()
		return s.queued.free == s.queued.budget
	}, time.Minute, time.Millisecond, "the answered requests gave their bytes back")
}

// TestConn_FrameLargerThanQueuedBudgetRunsAlone: a frame larger than the
// whole MaxQueuedRequestBytes takes all of it, so it is read once no other
// frame is queued, and is answered.
func TestConn_FrameLargerThanQueuedBudgetRunsAlone(t *testing.T) {
	s := inflateServer(t, 1, &Options{MaxQueuedRequestBytes: 64 << 10})
	nc := dial(t, listen(t, s))
	_, err := nc.Write(paddedVersions(7, 200<<10))
	require.NoError(t, err)
	got, err := answer(nc)
	require.NoError(t, err)
	assert.Equal(t, int32(7), got)
}

// TestQueuedBudget_WaitEndsWithContext: a frame waiting for room gives up
// when its connection or the server closes (its context is done), and
// takes nothing of the budget.
func TestQueuedBudget_WaitEndsWithContext(t *testing.T) {
	q := newQueuedBudget(100)
	require.NoError(t, q.reserve(context.Background(), 500), "larger than the budget: takes all of it")
	ctx, cancel := context.WithCancel(context.Background())
	waiting := newSignal()
	q.waiting = waiting.fire
	done := make(chan error, 1)
	go func() { done <- q.reserve(ctx, 1) }()
	<-waiting.c
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	q.unreserve(500)
	q.mu.Lock()
	assert.Equal(t, int64(100), q.free)
	q.mu.Unlock()
}

// TestConn_MaxConnections: past MaxConnections a connection is closed at
// once after it is accepted, while those served go on; once one of those
// closes, a new connection is served again.
func TestConn_MaxConnections(t *testing.T) {
	s := inflateServer(t, 1, &Options{MaxConnections: 2})
	addr := listen(t, s)
	a, b := dial(t, addr), dial(t, addr)
	require.NoError(t, roundTrip(a, 1))
	require.NoError(t, roundTrip(b, 2))

	c := dial(t, addr)
	_, err := answer(c)
	require.ErrorIs(t, err, io.EOF, "the third connection is closed by the server")

	require.NoError(t, roundTrip(a, 3), "the first connection still works")
	require.NoError(t, roundTrip(b, 4), "the second connection still works")

	require.NoError(t, a.Close())
	require.Eventually(t, func() bool {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer func() { _ = nc.Close() }()
		_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
		return roundTrip(nc, 5) == nil
	}, time.Minute, 10*time.Millisecond, "a connection is served once one of the two closed")
}

// TestNewServer_RequestBounds: negative MaxQueuedRequestBytes and
// MaxConnections are refused.
func TestNewServer_RequestBounds(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	_, err = NewServer(e, &Options{MaxQueuedRequestBytes: -1})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = NewServer(e, &Options{MaxConnections: -1})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}
