package kafka

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// deadlineConn records, in order, the deadlines set and the sizes read
// and written; its reads come from in, at most step bytes at a time.
type deadlineConn struct {
	discardConn
	in   *bytes.Reader
	step int

	mu     sync.Mutex
	events []string // "deadline", or "io" of one Read or Write
	sizes  []int
}

func (d *deadlineConn) note(ev string, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, ev)
	if ev == "io" {
		d.sizes = append(d.sizes, n)
	}
}

func (d *deadlineConn) SetWriteDeadline(time.Time) error { d.note("deadline", 0); return nil }
func (d *deadlineConn) SetReadDeadline(time.Time) error  { d.note("deadline", 0); return nil }
func (d *deadlineConn) Write(b []byte) (int, error)      { d.note("io", len(b)); return len(b), nil }
func (d *deadlineConn) Read(b []byte) (int, error) {
	n, err := d.in.Read(b[:min(len(b), d.step)])
	d.note("io", n)
	return n, err
}

// ioBetweenDeadlines returns the bytes moved between successive deadlines.
func (d *deadlineConn) ioBetweenDeadlines() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	cur, i := -1, 0
	for _, ev := range d.events {
		if ev == "deadline" {
			if cur >= 0 {
				out = append(out, cur)
			}
			cur = 0
			continue
		}
		if cur >= 0 {
			cur += d.sizes[i]
		}
		i++
	}
	if cur >= 0 {
		out = append(out, cur)
	}
	return out
}

func chunkServer(t *testing.T) *Server {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A large response is written a chunk at a time, each with its own
// deadline: a client reading steadily on a slow link is never cut off,
// however long the whole answer takes; one that stops is, within a chunk.
func TestConn_ResponseDeadlinePerChunk(t *testing.T) {
	s := chunkServer(t)
	d := &deadlineConn{}
	c := newConn(s, d)
	defer c.cancel()
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(9)
	for i := range 4000 { // about 400 KiB of topic names
		mt := kmsg.NewMetadataResponseTopic()
		name := string(bytes.Repeat([]byte{'a' + byte(i%26)}, 100))
		mt.Topic = &name
		resp.Topics = append(resp.Topics, mt)
	}
	require.NoError(t, c.write(header{key: 3, version: 9, correlation: 1}, resp))
	moved := d.ioBetweenDeadlines()
	require.Greater(t, len(moved), 4, "one deadline per chunk: %v", moved)
	total := 0
	for _, n := range moved {
		assert.LessOrEqual(t, n, ioChunk, "bytes written under one deadline")
		total += n
	}
	assert.Greater(t, total, 4*ioChunk)
}

// A request body is read a chunk at a time likewise.
func TestConn_RequestBodyDeadlinePerChunk(t *testing.T) {
	s := chunkServer(t)
	body := bytes.Repeat([]byte{7}, 5*ioChunk+123)
	d := &deadlineConn{in: bytes.NewReader(body), step: 8 << 10}
	c := newConn(s, d)
	defer c.cancel()
	got, err := c.readBody(int64(len(body)))
	require.NoError(t, err)
	assert.Equal(t, body, got)
	moved := d.ioBetweenDeadlines()
	require.GreaterOrEqual(t, len(moved), 6, "%v", moved)
	for _, n := range moved {
		assert.LessOrEqual(t, n, ioChunk, "bytes read under one deadline")
	}
}

var _ net.Conn = (*deadlineConn)(nil)
