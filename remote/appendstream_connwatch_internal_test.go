package remote

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// handOver accepts on a TCP listener and hands its first connection to
// first, every later one to rest: two servers behind one address, so that
// the first can go away (GracefulStop closes only its own listener) while
// the client reconnects to the second.
type handOver struct {
	lis   net.Listener
	first *chanListener
	rest  *chanListener
	done  chan struct{}
}

func newHandOver(t *testing.T) *handOver {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &handOver{lis: lis, first: newChanListener(lis.Addr()), rest: newChanListener(lis.Addr()), done: make(chan struct{})}
	go h.run()
	t.Cleanup(func() {
		_ = lis.Close()
		<-h.done
	})
	return h
}

func (h *handOver) run() {
	defer close(h.done)
	to := h.first
	for {
		conn, err := h.lis.Accept()
		if err != nil {
			return
		}
		if !to.give(conn) {
			_ = conn.Close()
		}
		to = h.rest
	}
}

// chanListener is a net.Listener whose connections come from handOver.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// give hands conn to the listener's Accept; false once it is closed.
func (l *chanListener) give(conn net.Conn) bool {
	select {
	case l.conns <- conn:
		return true
	case <-l.closed:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.conns:
		return conn, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// answerFirstBroker answers the first append of its stream stored; any
// later append it reads, it counts in late and ends the stream with
// Unavailable (the broker went away with it unanswered). A stream the
// client closes ends well.
type answerFirstBroker struct {
	pb.UnimplementedBrokerServer
	late *atomic.Int32
}

func (b answerFirstBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	in, err := st.Recv()
	if err != nil {
		return err
	}
	a := in.GetAppends()[0]
	out := &pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{{Seq: a.GetSeq(), Response: &pb.AppendResponse{Ids: []string{"id-1"}}}}}
	if err := st.Send(out); err != nil {
		return err
	}
	in, err = st.Recv()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	b.late.Add(int32(len(in.GetAppends())))
	return status.Error(codes.Unavailable, "broker went away with the append unanswered")
}

// A stream opened and answered while gRPC's state still said CONNECTING
// (it hands calls a new connection before its state says ready) never
// saw its connection ready. When that connection then went (here the
// server's GOAWAY: the transport still carries the stream, the broker
// reads no more of it) and another call connected again before the next
// append, the state said READY again, and the sender wrote that append on
// the old stream: it was reported unknown (ErrIndeterminate) although it
// was never stored. The client now counts its connection's departures,
// and a stream opened before one is drained: the append goes on a new
// stream, to the broker now behind the address, and is stored.
func TestAppendPipe_StreamOfALeftConnectionIsDrainedAfterAReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	h := newHandOver(t)
	var late atomic.Int32
	old := grpc.NewServer()
	pb.RegisterBrokerServer(old, answerFirstBroker{late: &late})
	oldServed := make(chan error, 1)
	go func() { oldServed <- old.Serve(h.first) }()
	defer func() { old.Stop(); <-oldServed }()
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(h.rest) }()
	defer func() { srv.Stop(); <-served }()

	c, err := Dial(h.lis.Addr().String(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	var lag atomic.Bool // the state says CONNECTING on a connection in use
	lag.Store(true)
	c.pipe.connState = func() connectivity.State {
		if lag.Load() {
			return connectivity.Connecting
		}
		return c.conn.GetState()
	}
	send := func(body string) error {
		done := make(chan error, 1)
		c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}},
			func(_ equeue.AppendResult, err error) { done <- err })
		return <-done
	}
	require.NoError(t, send("first"), "answered by the old broker")
	c.pipe.mu.Lock()
	first := c.pipe.cur
	c.pipe.mu.Unlock()
	require.NotNil(t, first)
	lag.Store(false)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		old.GracefulStop() // GOAWAY: ends once the client leaves the stream
	}()
	eventuallyTrue(t, func() bool {
		s := c.conn.GetState()
		return s == connectivity.Idle || s == connectivity.TransientFailure
	}, "the client never saw the old connection go")
	_, err = c.Route(ctx, "t") // another call connects again
	require.NoError(t, err)
	eventuallyTrue(t, func() bool { return c.conn.GetState() == connectivity.Ready }, "the client never connected again")
	// The client notes the departure on a goroutine of its own: wait for
	// it to show, for a bounded while (without the fix it never does).
	left := pollFor(func() bool {
		c.pipe.mu.Lock()
		defer c.pipe.mu.Unlock()
		return c.pipe.connLeft(first)
	})

	assert.NoError(t, send("second"), "stored through the broker now behind the address")
	assert.True(t, left, "the stream's connection went and the client did not see it")
	assert.Zero(t, late.Load(), "the old broker read the append on the old stream")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "second", string(res.Messages[0].Body))
	select {
	case <-stopped:
	case <-ctx.Done():
		t.Fatal("the old broker's stream never ended")
	}
}

// eventuallyTrue fails the test unless cond holds within a generous bound.
func eventuallyTrue(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	if !pollFor(cond) {
		t.Fatal(msg)
	}
}

// pollFor reports whether cond held within a generous bound.
func pollFor(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
