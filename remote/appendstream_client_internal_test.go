package remote

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A stream that breaks between the sender finding it and taking a batch
// for it (its reader saw the call end): the batch goes on a new stream,
// and the client does not write to the broken stream's emptied table.
func TestAppendPipe_StreamBreakingBeforeTheBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c, stop := serveInternal(t, e)
	defer stop()
	send := func(body string) error {
		done := make(chan error, 1)
		c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}},
			func(_ equeue.AppendResult, err error) { done <- err })
		return <-done
	}
	require.NoError(t, send("first")) // a stream is open

	var once sync.Once
	cut := func(p *appendPipe, ps *pipeStream) {
		once.Do(func() { p.broke(ps, errors.New("cut")) })
	}
	testHookBeforeBatch.Store(&cut)
	defer testHookBeforeBatch.Store(nil)
	require.NoError(t, send("second"), "sent on a new stream")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
}

// serveInternal serves e on loopback and dials it; stop closes the client
// and stops the server.
func serveInternal(t *testing.T, e *equeue.Engine) (c *Client, stop func()) {
	t.Helper()
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	c, err = Dial(lis.Addr().String(), nil)
	if err != nil {
		srv.Stop()
		<-served
		require.NoError(t, err)
	}
	return c, func() {
		require.NoError(t, c.Close())
		srv.Stop()
		<-served
	}
}

// The connection breaks between the sender choosing the stream and writing
// a batch on it, and the call has ended before its reader ends the stream:
// gRPC refuses the write, so the batch never left the client. It goes on
// a new stream (to the server started again on the address) instead of
// being reported unknown when the reader ends the old one.
func TestAppendPipe_BatchRefusedByAnEndedCallGoesOnANewStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { // after the client's goroutines are gone
		testHookBeforeBatch.Store(nil)
		testHookStreamEnded.Store(nil)
	}()
	c, err := Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	send := func(body string) <-chan error {
		done := make(chan error, 1)
		c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}},
			func(_ equeue.AppendResult, err error) { done <- err })
		return done
	}
	require.NoError(t, <-send("first")) // a stream is open

	// The old stream's reader sees its call end and waits there.
	ended := make(chan struct{})
	release := make(chan struct{})
	var endOnce, releaseOnce sync.Once
	streamEnded := func(*pipeStream) {
		endOnce.Do(func() {
			close(ended)
			<-release
		})
	}
	testHookStreamEnded.Store(&streamEnded)
	releaseReader := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseReader()
	// The server restarts once the sender has chosen the old stream.
	var old *pipeStream // guarded by c.pipe.mu
	restarted := make(chan *Server, 1)
	served2 := make(chan error, 1)
	var restartOnce sync.Once
	restart := func(p *appendPipe, ps *pipeStream) {
		restartOnce.Do(func() {
			p.mu.Lock()
			old = ps
			p.mu.Unlock()
			srv.Stop()
			if err := <-served; err != nil {
				t.Error(err)
			}
			<-ended
			srv2, err := NewServer(e, nil)
			if err != nil {
				t.Error(err)
				return
			}
			lis2, err := net.Listen("tcp", lis.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			restarted <- srv2
			go func() { served2 <- srv2.Serve(lis2) }()
		})
	}
	testHookBeforeBatch.Store(&restart)
	defer func() {
		select {
		case srv2 := <-restarted:
			srv2.Stop()
			require.NoError(t, <-served2)
		default:
		}
	}()

	done := send("second")
	// Sent on a new stream, or (before the fix) left on the old one for its
	// reader to report.
	require.Eventually(t, func() bool {
		c.pipe.mu.Lock()
		defer c.pipe.mu.Unlock()
		return len(done) > 0 || (old != nil && old.broken)
	}, 30*time.Second, 5*time.Millisecond, "the send was neither sent again nor left on the old stream")
	releaseReader()
	require.NoError(t, <-done, "the send never left the client: it goes on a new stream")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
}
