package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestRequest_ReplyLargerThanTheClientAcceptsDoesNotWedge: a reply larger
// than the requester's client accepts (its MaxMessageBytes) cannot reach
// the requester; it is dropped, and the replies after it still reach their
// requests, rather than the reply listener retrying the reply it cannot
// receive for good while every later request times out.
func TestRequest_ReplyLargerThanTheClientAcceptsDoesNotWedge(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	s := startServer(t, e, "", nil)
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})
	p := newProducer(t, small)
	rp := newProducer(t, e) // the service, in-process: it may reply 2 MiB

	first := make(chan error, 1)
	fctx, cancelFirst := context.WithCancel(ctx)
	defer cancelFirst()
	go func() {
		_, err := p.Request(fctx, &equeue.Message{Topic: "rpc", Body: []byte("big")})
		first <- err
	}()
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "rpc", Offset: 0, Max: 1, Wait: 10 * time.Second})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.NoError(t, equeue.Reply(ctx, rp, res.Messages[0], make([]byte, 2<<20), nil))

	second := make(chan error, 1)
	sctx, cancelSecond := context.WithTimeout(ctx, 5*time.Second) // long enough for a reply sent at once
	defer cancelSecond()
	go func() {
		rep, err := p.Request(sctx, &equeue.Message{Topic: "rpc", Body: []byte("small")})
		if err == nil && string(rep.Body) != "re:small" {
			err = assert.AnError
		}
		second <- err
	}()
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "rpc", Offset: 1, Max: 1, Wait: 10 * time.Second})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.NoError(t, equeue.Reply(ctx, rp, res.Messages[0], []byte("re:small"), nil))

	select {
	case err := <-second:
		require.NoError(t, err, "the reply after the one the client cannot receive")
	case err := <-first:
		t.Fatalf("the request whose reply the client cannot receive ended first: %v", err)
	}
	cancelFirst()
	assert.ErrorIs(t, <-first, equeue.ErrRequestTimeout, "its reply was dropped: it waits until its context ends")
}
