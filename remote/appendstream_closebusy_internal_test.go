package remote

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// busyStreamBroker refuses every stream append as busy.
type busyStreamBroker struct {
	pb.UnimplementedBrokerServer
}

func (busyStreamBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	for {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		out := &pb.AppendStreamResponse{}
		for _, a := range in.GetAppends() {
			out.Results = append(out.Results, &pb.StreamAppendResult{Seq: a.GetSeq(), Error: pullError(ErrBusy)})
		}
		if err := st.Send(out); err != nil {
			return err
		}
	}
}

// busyClient dials a broker that refuses every stream append as busy;
// longPause is closed once an append's retry waits a long pause (several
// refusals in a row), so a Close then starts long before the retry would
// be due. The broker stops when the test ends.
func busyClient(t *testing.T) (c *Client, longPause <-chan struct{}) {
	t.Helper()
	addr, longPause := serveBusyStream(t)
	c, err := Dial(addr, nil)
	require.NoError(t, err)
	return c, longPause
}

// serveBusyStream serves a broker that refuses every stream append as
// busy, and returns its address and longPause (see busyClient).
func serveBusyStream(t *testing.T) (addr string, longPause <-chan struct{}) {
	t.Helper()
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, busyStreamBroker{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	paused := make(chan struct{})
	var signalled atomic.Bool
	hook := func(wait time.Duration) {
		if wait >= 100*busyBackoffMin && signalled.CompareAndSwap(false, true) {
			close(paused)
		}
	}
	testHookBusyBackoff.Store(&hook)
	t.Cleanup(func() { testHookBusyBackoff.Store(nil) })
	return lis.Addr().String(), paused
}

// An append refused as busy waits for its retry on a timer; Close did not
// wait for that timer, so the append's callback (with equeue.ErrClosed)
// could run after Close had returned. Once Close returns, no callback of
// the client runs any more: here Close starts while the append waits for
// its retry, and its callback has run when Close returns.
func TestClient_CloseCompletesAnAppendWaitingForItsBusyRetry(t *testing.T) {
	c, longPause := busyClient(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var called atomic.Bool
	errs := make(chan error, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}, func(_ equeue.AppendResult, err error) {
		called.Store(true)
		errs <- err
	})
	select {
	case <-longPause:
	case err := <-errs:
		t.Fatalf("append answered before it waited for a retry: %v", err)
	}
	require.NoError(t, c.Close())
	ran := called.Load()
	assert.True(t, ran, "the callback runs before Close returns")
	if !ran {
		<-errs // let it run before the test ends
		return
	}
	assert.ErrorIs(t, <-errs, equeue.ErrClosed, "a send waiting for its retry never left the client")
}

// A second Close, called while the first still completes the client's
// appends, returns only once the first is done: its caller may rely on
// no callback running after it, as after the first.
func TestClient_ConcurrentCloseWaitsForTheFirst(t *testing.T) {
	c, longPause := busyClient(t)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entered := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}, func(equeue.AppendResult, error) {
		close(entered)
		<-release
		finished.Store(true)
	})
	<-longPause
	first := make(chan error, 1)
	go func() { first <- c.Close() }()
	<-entered // the first Close completes the append: its callback runs

	second := make(chan bool, 1)
	go func() {
		assert.NoError(t, c.Close())
		second <- finished.Load()
	}()
	// Give a second Close that does not wait the time to return; one that
	// waits returns only after the release below.
	time.Sleep(100 * time.Millisecond)
	close(release)
	assert.True(t, <-second, "the second Close returned while the first's callback still ran")
	require.NoError(t, <-first)
}
