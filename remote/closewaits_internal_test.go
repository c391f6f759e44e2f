package remote

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// routedHoldingBroker is a holdingBroker that routes every topic to one
// writable queue, for a producer.
type routedHoldingBroker struct {
	*holdingBroker
}

func (routedHoldingBroker) Route(_ context.Context, in *pb.RouteRequest) (*pb.RouteResponse, error) {
	return &pb.RouteResponse{Topic: in.GetTopic(), Queues: 1, Writable: []int32{0}}, nil
}

// serveHolding serves a routedHoldingBroker on a loopback port until the
// test ends.
func serveHolding(t *testing.T) string {
	t.Helper()
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, routedHoldingBroker{&holdingBroker{got: make(chan struct{})}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	return lis.Addr().String()
}

// gateWaitBegins returns a channel closed once a wait for g's calls
// begins (Close waits for them), until the test ends.
func gateWaitBegins(t *testing.T, g *callGate) <-chan struct{} {
	began := make(chan struct{})
	var once sync.Once
	hook := func(w *callGate) {
		if w == g {
			once.Do(func() { close(began) })
		}
	}
	testHookGateWait.Store(&hook)
	t.Cleanup(func() { testHookGateWait.Store(nil) })
	return began
}

// An AppendAsync waiting for a slot of a full window when Close starts is
// over before Close returns: its callback runs with equeue.ErrClosed, and
// not after Close returned. Its callback waits until either Close has
// returned (the late callback) or Close waits for the calls in progress:
// a Close that did not wait for them would return first.
func TestClient_CloseCompletesAnAppendWaitingForTheWindow(t *testing.T) {
	c, err := Dial(serveHolding(t), nil)
	require.NoError(t, err)
	ctx := context.Background()
	req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}
	var held atomic.Int64
	for range streamWindow {
		c.AppendAsync(ctx, req, func(equeue.AppendResult, error) { held.Add(1) })
	}

	waiting := make(chan struct{})
	hook := func() { close(waiting) }
	testHookSlotWait.Store(&hook)
	defer testHookSlotWait.Store(nil)
	draining := gateWaitBegins(t, c.calls)

	closeReturned := make(chan struct{})
	late := make(chan bool, 1)
	errs := make(chan error, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		c.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) {
			errs <- err
			select {
			case <-closeReturned:
				late <- true
			case <-draining:
				late <- false
			}
		})
	}()
	<-waiting
	require.NoError(t, c.Close())
	close(closeReturned)
	<-returned
	assert.False(t, <-late, "the callback ran after Close returned")
	assert.ErrorIs(t, <-errs, equeue.ErrClosed)
	assert.Equal(t, int64(streamWindow), held.Load(), "every held append was completed by Close")
}
