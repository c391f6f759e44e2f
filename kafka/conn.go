package kafka

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxRequestSize bounds one request frame (Kafka's socket.request.max.bytes).
const maxRequestSize = 100 << 20

// maxPreAuthRequestSize bounds a frame before SASL authentication, when
// only ApiVersions and the SASL requests are served (Kafka's
// SaslServerAuthenticator has the same 512 KiB bound): a peer that has
// not shown a token does not get the listener to set 100 MiB aside.
const maxPreAuthRequestSize = 512 << 10

// defaultRequestReadTimeout is Options.RequestReadTimeout when it is
// zero, the Java client's default request timeout.
const defaultRequestReadTimeout = 30 * time.Second

// defaultConnectionsMaxIdle is Options.ConnectionsMaxIdle when it is
// zero, Kafka's connections.max.idle.ms default.
const defaultConnectionsMaxIdle = 10 * time.Minute

// conn serves one client connection. Requests are handled one at a time, in
// the order they arrived, so responses go out in request order, as Kafka
// brokers do; a client pipelines by sending ahead.
type conn struct {
	s      *Server
	nc     net.Conn
	r      *bufio.Reader
	ctx    context.Context
	cancel context.CancelFunc
	// SASL state: authed is set once a token was accepted (or when the
	// server needs none); rights are that token's.
	authed    bool
	rights    Rights
	handshake bool // SaslHandshake asked for PLAIN
	// authFailed: a SaslAuthenticate was refused; its answer is the
	// connection's last (as Kafka closes it), so a client cannot try one
	// token after another on one connection.
	authFailed bool
	out        []byte
	fetch      fetchScratch
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{s: s, nc: nc, r: bufio.NewReaderSize(nc, 64<<10), ctx: ctx, cancel: cancel}
	if s.tokens == nil {
		c.authed, c.rights = true, RightAll
	}
	return c
}

// header is a request header (v1, or v2 for flexible requests).
type header struct {
	key, version int16
	correlation  int32
	clientID     string
}

func (c *conn) serve() {
	defer c.cancel()
	defer func() { _ = c.nc.Close() }()
	// A closed connection or a server shutdown ends every call in progress.
	stop := context.AfterFunc(c.ctx, func() { _ = c.nc.Close() })
	defer stop()
	var size [4]byte
	for {
		if err := c.readSize(size[:]); err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		limit := int32(maxRequestSize)
		if !c.authed {
			limit = maxPreAuthRequestSize
		}
		if n < 8 || n > limit {
			c.s.log.Warn("kafka: bad request size; closing", "remote", c.nc.RemoteAddr().String(), "size", n, "authenticated", c.authed)
			return
		}
		if err := c.serveFrame(int64(n)); err != nil {
			if !errors.Is(err, errConnGone) {
				c.s.log.Info("kafka: closing connection", "remote", c.nc.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
}

// readSize reads the next frame's size within Options.ConnectionsMaxIdle,
// as Kafka closes a connection idle for connections.max.idle.ms: a client
// that keeps a connection open and sends nothing does not hold it, and
// its goroutine, for ever. An error closes the connection.
func (c *conn) readSize(size []byte) error {
	if err := c.nc.SetReadDeadline(time.Now().Add(c.s.o.ConnectionsMaxIdle)); err != nil {
		return errConnGone
	}
	if _, err := io.ReadFull(c.r, size); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.s.log.Debug("kafka: closing idle connection", "remote", c.nc.RemoteAddr().String(), "idle", c.s.o.ConnectionsMaxIdle)
		}
		return errConnGone
	}
	return nil
}

// errConnGone: the connection or the server closed while a frame was
// awaited or read; there is nothing to log.
var errConnGone = errors.New("kafka: connection gone")

// serveFrame reads and answers the request frame of n bytes whose size
// was read: it reserves the frame's bytes of the listener's queued
// budget before it allocates and reads the body, within
// Options.RequestReadTimeout, and gives them back once the request was
// answered or failed. An error closes the connection.
func (c *conn) serveFrame(n int64) error {
	if err := c.s.queued.reserve(c.ctx, n); err != nil {
		return errConnGone
	}
	defer c.s.queued.unreserve(n)
	buf, err := c.readBody(n)
	if err != nil {
		return err
	}
	if c.s.handling != nil {
		c.s.handling()
	}
	return c.handleRecovered(buf)
}

// readBody reads a frame's body of n bytes within
// Options.RequestReadTimeout, so that a client that sends a size and then
// trickles or stops sending does not hold the bytes it reserved for ever
// (readSize sets the next deadline).
func (c *conn) readBody(n int64) ([]byte, error) {
	buf := make([]byte, n)
	for read := 0; read < len(buf); {
		// A deadline per chunk: a client sending steadily, however
		// slowly its link runs, is not cut off; one that stalls is.
		if err := c.nc.SetReadDeadline(time.Now().Add(c.s.o.RequestReadTimeout)); err != nil {
			return nil, errConnGone
		}
		end := min(read+ioChunk, len(buf))
		k, err := io.ReadFull(c.r, buf[read:end])
		read += k
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("request body of %d bytes: no %d bytes arrived within %v (%d read)", n, ioChunk, c.s.o.RequestReadTimeout, read)
			}
			return nil, errConnGone
		}
	}
	return buf, nil
}

// ioChunk is how much of a request body must arrive, or of a response be
// taken by the client, within Options.RequestReadTimeout: the least rate
// the listener accepts is ioChunk per RequestReadTimeout (about 2 KiB/s
// at the default), as a web server's timeouts between successive reads
// and writes bound it.
const ioChunk = 64 << 10

// handleRecovered is handle, with a panic turned into an error that
// closes this connection: a request that trips a bug of the listener must
// not take down the program that embeds the broker.
func (c *conn) handleRecovered(buf []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.panicked(p)
		}
	}()
	return c.handle(buf)
}

// panicked logs p, a panic recovered while serving a request, with the
// stack of the goroutine that panicked (call it from the deferred function
// that recovered), and returns the error that closes the connection.
// Goroutines a request starts recover with it too (see produce).
func (c *conn) panicked(p any) error {
	c.s.log.Error("kafka: panic in a request; closing the connection", "remote", c.nc.RemoteAddr().String(), "panic", p, "stack", string(debug.Stack()))
	return fmt.Errorf("internal error: %v", p)
}

// handle parses and answers one request. An error closes the connection.
func (c *conn) handle(buf []byte) error {
	h, body, err := parseHeader(buf)
	if err != nil {
		return err
	}
	req := kmsg.RequestForKey(h.key)
	sup, known := supported[h.key]
	if req == nil || !known {
		return fmt.Errorf("unsupported api key %d", h.key)
	}
	if h.version < sup.min || h.version > sup.max {
		if h.key == apiVersionsKey {
			// Answer in v0, which every client reads, and say which
			// versions we serve (KIP-511).
			resp := c.apiVersions()
			resp.ErrorCode = errUnsupportedVersion
			resp.SetVersion(0)
			return c.write(h, resp)
		}
		return fmt.Errorf("%s v%d not supported (serving v%d..v%d)", kmsg.NameForKey(h.key), h.version, sup.min, sup.max)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() { // a v2 header; only ApiVersions' response header has no tags
		if body, err = skipHeaderTags(body); err != nil {
			return err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(h.key), h.version, err)
	}
	if !c.authed && h.key != apiVersionsKey && h.key != saslHandshakeKey && h.key != saslAuthenticateKey {
		return fmt.Errorf("%s before SASL authentication", kmsg.NameForKey(h.key))
	}
	resp, err := c.dispatch(h, req)
	if err != nil {
		return err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		// acks=0: the producer expects no answer. A failure would then go
		// unseen, so, as Kafka does, the connection is closed instead.
		if code := produceFailure(resp); code != errNone {
			return fmt.Errorf("produce with acks=0 failed (error code %d): closing the connection", code)
		}
		return nil
	}
	resp.SetVersion(h.version)
	if err := c.write(h, resp); err != nil {
		return err
	}
	if c.authFailed {
		return errors.New("SASL authentication failed")
	}
	return nil
}

// produceFailure returns the first partition error of a produce answer,
// errNone when every partition was stored.
func produceFailure(resp kmsg.Response) int16 {
	p, ok := resp.(*kmsg.ProduceResponse)
	if !ok {
		return errNone
	}
	for _, t := range p.Topics {
		for _, part := range t.Partitions {
			if part.ErrorCode != errNone {
				return part.ErrorCode
			}
		}
	}
	return errNone
}

// write sends one response: size, correlation ID, header tags for flexible
// responses other than ApiVersions, body. Each ioChunk of it must be taken
// within Options.RequestReadTimeout, so that a client that stops reading a
// large answer does not hold this connection's goroutine, and its
// request's bytes of MaxQueuedRequestBytes, for ever.
func (c *conn) write(h header, resp kmsg.Response) error {
	b := append(c.out[:0], 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(h.correlation))
	if resp.IsFlexible() && h.key != apiVersionsKey {
		b = append(b, 0)
	}
	b = resp.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	var err error
	for written := 0; written < len(b) && err == nil; {
		// A deadline per chunk, as readBody's.
		if err = c.nc.SetWriteDeadline(time.Now().Add(c.s.o.RequestReadTimeout)); err != nil {
			break
		}
		end := min(written+ioChunk, len(b))
		var k int
		k, err = c.nc.Write(b[written:end])
		written += k
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("response of %d bytes: no %d bytes taken within %v (%d written)", len(b), ioChunk, c.s.o.RequestReadTimeout, written)
		}
	}
	if cap(b) <= 4<<20 {
		c.out = b[:0] // keep a moderate buffer for the next response
	} else {
		c.out = nil
	}
	return err
}

// parseHeader reads the fixed part of a request header.
func parseHeader(b []byte) (header, []byte, error) {
	var h header
	if len(b) < 10 {
		return h, nil, errors.New("short request header")
	}
	h.key = int16(binary.BigEndian.Uint16(b))
	h.version = int16(binary.BigEndian.Uint16(b[2:]))
	h.correlation = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	b = b[10:]
	if n > 0 {
		if int(n) > len(b) {
			return h, nil, errors.New("short client ID")
		}
		h.clientID, b = string(b[:n]), b[n:]
	}
	return h, b, nil
}

// skipHeaderTags drops the tagged fields of a v2 request header.
func skipHeaderTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad header tags")
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad header tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errors.New("bad header tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}
