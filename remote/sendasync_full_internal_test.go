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

// receivingHoldingBroker routes every topic to one writable queue and
// holds every stream append it receives, never answering: each one
// received is told on got.
type receivingHoldingBroker struct {
	pb.UnimplementedBrokerServer
	got chan struct{}
}

func (receivingHoldingBroker) Route(_ context.Context, in *pb.RouteRequest) (*pb.RouteResponse, error) {
	return &pb.RouteResponse{Topic: in.GetTopic(), Queues: 1, Writable: []int32{0}}, nil
}

func (b receivingHoldingBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	for {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		for range in.GetAppends() {
			select {
			case b.got <- struct{}{}:
			default: // more than the test waits for: not counted
			}
		}
	}
}

// serveReceivingHolding serves a receivingHoldingBroker on a loopback
// port until the test ends; the channel tells each append it received.
func serveReceivingHolding(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	b := receivingHoldingBroker{got: make(chan struct{}, 2*streamWindow)}
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	return lis.Addr().String(), b.got
}

// Producer.SendAsync over a Client whose append window is full (the
// broker holds every append) blocks, as backpressure, until a slot frees
// or its context ends: one whose context ends while it waits returns a
// future failed with the context's error (never sent), and one still
// waiting when the client closes returns a future failed with
// equeue.ErrClosed. The sends of the window, which the broker received
// and holds, fail with equeue.ErrIndeterminate at Close (a send still
// queued in the client at Close would fail with equeue.ErrClosed, not
// sent: the test waits until the broker received every one).
func TestProducer_SendAsyncOverAFullWindowBlocksUntilRoomOrContextEnds(t *testing.T) {
	addr, received := serveReceivingHolding(t)
	c, err := Dial(addr, nil)
	require.NoError(t, err)
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	ctx := context.Background()
	held := make([]*equeue.SendFuture, 0, streamWindow)
	for range streamWindow {
		held = append(held, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("held")}))
	}
	for _, f := range held {
		select {
		case <-f.Done():
			_, err := f.Result(ctx)
			t.Fatalf("a send of the window completed while the broker holds it: %v", err)
		default:
		}
	}
	// Every send of the window left the client: the broker holds it.
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for i := range streamWindow {
		select {
		case <-received:
		case <-deadline.C:
			t.Fatalf("the broker received %d of the window's %d sends", i, streamWindow)
		}
	}

	var waiting atomic.Int64
	waited := make(chan struct{}, 2)
	hook := func() {
		waiting.Add(1)
		waited <- struct{}{}
	}
	testHookSlotWait.Store(&hook)
	defer testHookSlotWait.Store(nil)

	// One whose context ends while it waits.
	cctx, cancel := context.WithCancel(ctx)
	returned := make(chan *equeue.SendFuture, 1)
	go func() { returned <- p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("cancelled")}) }()
	<-waited
	select {
	case <-returned:
		t.Fatal("SendAsync returned while the window was full and its context live")
	default:
	}
	cancel()
	f := <-returned
	_, err = f.Result(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate, "never sent")

	// One still waiting when the client closes.
	go func() { returned <- p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closed")}) }()
	<-waited
	require.NoError(t, c.Close())
	f = <-returned
	_, err = f.Result(ctx)
	require.ErrorIs(t, err, equeue.ErrClosed)
	for _, f := range held {
		_, err := f.Result(ctx)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "held at the broker when the client closed")
	}
	assert.Equal(t, int64(2), waiting.Load())
	require.NoError(t, p.Close())
}
