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
	testHookBeforeBatch = func(p *appendPipe, ps *pipeStream) {
		once.Do(func() { p.broke(ps, errors.New("cut")) })
	}
	defer func() { testHookBeforeBatch = nil }()
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
