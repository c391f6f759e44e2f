package remote

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// heldAppends is a unary server interceptor that holds every Append call
// until release is closed, counting the calls that reached it and the
// most held at once.
type heldAppends struct {
	release        chan struct{}
	started, held  atomic.Int64
	mostHeldAtOnce atomic.Int64
}

func (h *heldAppends) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod != pb.Broker_Append_FullMethodName {
		return handler(ctx, req)
	}
	h.started.Add(1)
	n := h.held.Add(1)
	for {
		most := h.mostHeldAtOnce.Load()
		if n <= most || h.mostHeldAtOnce.CompareAndSwap(most, n) {
			break
		}
	}
	select {
	case <-h.release:
	case <-ctx.Done():
	}
	h.held.Add(-1)
	return handler(ctx, req)
}

// An append whose context carries outgoing metadata goes as a unary call
// on a goroutine of its own; nothing bounded those goroutines, so
// middleware putting metadata on every context made SendAsync a goroutine
// (and a call at the broker) per message, however slow the broker. They
// now hold a slot of the client's append window, as the stream's appends
// do: past it, AppendAsync waits (bounded by its context) for a slot.
func TestAppendPipe_MetadataAppendsHoldTheWindow(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // runs last, once the engine is closed
	const window, n = 4, 12
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	h := &heldAppends{release: make(chan struct{})}
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(append(srv.GRPCServerOptions(), grpc.ChainUnaryInterceptor(h.intercept))...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	c, err := Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	c.pipe.slots = make(chan struct{}, window) // a small window, before any append
	released := false
	defer func() {
		if !released {
			close(h.release)
		}
		require.NoError(t, c.Close())
		srv.Stop()
		gs.Stop()
		<-served
	}()

	var waiting atomic.Int64
	hook := func() { waiting.Add(1) }
	testHookSlotWait.Store(&hook)
	defer testHookSlotWait.Store(nil)

	type outcome struct {
		body string
		res  equeue.AppendResult
		err  error
	}
	results := make(chan outcome, n)
	traced := metadata.AppendToOutgoingContext(ctx, "x-trace", "window")
	for i := range n {
		body := fmt.Sprint("m", i)
		go c.AppendAsync(traced, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}},
			func(res equeue.AppendResult, err error) { results <- outcome{body, res, err} })
	}
	settled := func() bool { return h.started.Load() == window && waiting.Load() == n-window }
	for deadline := time.Now().Add(30 * time.Second); !settled() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	require.Truef(t, settled(), "every append is held at the broker or waits for a slot (at the broker: %d, waiting: %d, held at once at most: %d)",
		h.started.Load(), waiting.Load(), h.mostHeldAtOnce.Load())

	// One more, whose context ends while it waits: never sent, not stored.
	cctx, ccancel := context.WithCancel(traced)
	gone := make(chan error, 1)
	go c.AppendAsync(cctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("cancelled")}}},
		func(_ equeue.AppendResult, err error) { gone <- err })
	for deadline := time.Now().Add(30 * time.Second); waiting.Load() != n-window+1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, int64(n-window+1), waiting.Load(), "the last append waits for a slot")
	assert.Equal(t, int64(window), h.started.Load(), "appends at the broker")
	ccancel()
	err = <-gone
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "it never left the client")

	close(h.release)
	released = true
	var stored []string
	for range n {
		o := <-results
		if assert.NoError(t, o.err, o.body) {
			assert.Len(t, o.res.IDs, 1, o.body)
		}
		stored = append(stored, o.body)
	}
	assert.Equal(t, int64(n), h.started.Load(), "every append but the cancelled one reached the broker once")
	assert.LessOrEqual(t, h.mostHeldAtOnce.Load(), int64(window), "the broker held more appends than the window")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 2 * n})
	require.NoError(t, err)
	var got []string
	for _, m := range res.Messages {
		got = append(got, string(m.Body))
	}
	slices.Sort(got)
	slices.Sort(stored)
	assert.Equal(t, stored, got, "each append stored once, the cancelled one never")
}
