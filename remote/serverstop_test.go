package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// panickyAsyncBackend is an engine whose AppendAsync, which it owns (so the
// append stream takes it), panics before it answers: a fault in a Backend
// of the application's.
type panickyAsyncBackend struct{ *equeue.Engine }

func (b *panickyAsyncBackend) AppendAsync(context.Context, *equeue.AppendRequest, func(equeue.AppendResult, error)) {
	panic("remote test: AppendAsync fails")
}

func (b *panickyAsyncBackend) FastPathOwner() any { return b }

// An append of the stream whose backend panicked was answered as an
// internal error but kept its slot of MaxInFlight: after MaxInFlight of
// them the server refused every call as busy, for good.
func TestAppendStream_PanicGivesItsInFlightSlotBack(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const limit = 2
	srv, err := remote.NewBackendServer(&panickyAsyncBackend{e}, &remote.ServerOptions{MaxInFlight: limit})
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "").addr, nil)
	for i := range limit {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.Error(t, err, "append %d", i)
		assert.NotErrorIs(t, err, remote.ErrBusy, "append %d", i)
	}
	// Busy is retried until the call's context ends: bound it.
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.Topics(tctx)
	require.NoError(t, err, "the panicked appends still hold every slot")
}

// A client that sent appends on an AppendStream and stopped reading the
// answers, its connection alive, held GracefulStop for ever: the server's
// answering loop waited in SendMsg for flow-control room the client never
// gave, and gRPC's GracefulStop waits for every call. After
// GracefulStopTimeout the server now ends the calls as Stop does, and no
// goroutine of the call is left.
func TestServer_GracefulStopEndsAStreamWhoseClientDoesNotRead(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{GracefulStopTimeout: 200 * time.Millisecond})
	// A set window (64 KiB, gRPC's least) does not grow: the unread
	// answers soon fill it.
	cc, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	st, err := pb.NewBrokerClient(cc).AppendStream(sctx)
	require.NoError(t, err)
	// Send appends until the stream ends, never reading an answer: once the
	// answers fill the window the server stops answering, then reading.
	sent := make(chan error, 1)
	go func() {
		for seq := uint64(0); ; seq += 64 {
			req := &pb.AppendStreamRequest{Appends: make([]*pb.StreamAppend, 64)}
			for i := range req.Appends {
				req.Appends[i] = &pb.StreamAppend{Seq: seq + uint64(i),
					Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("x")}}}}
			}
			if err := st.Send(req); err != nil {
				sent <- err
				return
			}
		}
	}()
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("GracefulStop did not return: the stream whose client does not read holds it")
	}
	select {
	case err := <-sent:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end")
	}
}
