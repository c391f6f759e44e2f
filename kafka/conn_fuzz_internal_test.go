package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// discardConn is a net.Conn whose writes go nowhere: the answers of the
// fuzzed requests.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092} }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// requestFrame encodes req as a request frame without its size: header
// (v1, or v2 for a flexible request) and body.
func requestFrame(req kmsg.Request, correlation int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// FuzzConn_AnyRequest: no request frame, of any served kind and version,
// makes the listener panic; it answers or closes the connection. A panic
// here would take down the host process of an embedded broker.
func FuzzConn_AnyRequest(f *testing.F) {
	for key, v := range supported {
		for version := v.min; version <= v.max; version++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			f.Add(requestFrame(req, 1))
		}
	}
	e, err := equeue.Open("", &equeue.Options{InMemory: true, AutoCreateTopics: true})
	require.NoError(f, err)
	f.Cleanup(func() { _ = e.Close() })
	require.NoError(f, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(f, err)
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := newConn(s, discardConn{})
		// A fetch or a join waits at most this long.
		ctx, cancel := context.WithTimeout(c.ctx, 20*time.Millisecond)
		defer cancel()
		c.ctx = ctx
		_ = c.handle(frame)
		c.cancel()
	})
}

// panickyBroker panics when the topics are listed: a stand-in for a bug
// that some request trips.
type panickyBroker struct{ *equeue.Engine }

func (panickyBroker) Topics(context.Context) ([]equeue.TopicInfo, error) {
	panic("a bug in the broker")
}

// TestConn_PanicClosesOnlyThatConnection: a request that panics closes its
// connection with an error and a log line; the process and the server go
// on.
func TestConn_PanicClosesOnlyThatConnection(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	var logs strings.Builder
	var mu sync.Mutex
	s, err := NewServer(panickyBroker{e}, &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	meta := kmsg.NewPtrMetadataRequest() // every topic: lists them
	meta.SetVersion(4)
	err = newConn(s, discardConn{}).handleRecovered(requestFrame(meta, 1))
	require.ErrorContains(t, err, "internal error: a bug in the broker")
	mu.Lock()
	require.Contains(t, logs.String(), "panic in a request")
	mu.Unlock()

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	require.NoError(t, newConn(s, discardConn{}).handleRecovered(requestFrame(versions, 2)), "the next connection is served")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
