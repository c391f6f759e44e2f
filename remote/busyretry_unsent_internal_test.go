package remote

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// busyOnceBroker refuses each call's first attempt as busy (as a server
// at its MaxInFlight does, before running it), counting the attempts.
type busyOnceBroker struct {
	pb.UnimplementedBrokerServer
	creates, sendBacks atomic.Int64
}

func (b *busyOnceBroker) CreateTopic(context.Context, *pb.CreateTopicRequest) (*pb.CreateTopicResponse, error) {
	if b.creates.Add(1) == 1 {
		return nil, toStatus(fmt.Errorf("%w: injected", ErrBusy))
	}
	return &pb.CreateTopicResponse{}, nil
}

func (b *busyOnceBroker) SendBack(context.Context, *pb.SendBackRequest) (*pb.SendBackResponse, error) {
	if b.sendBacks.Add(1) == 1 {
		return nil, toStatus(fmt.Errorf("%w: injected", ErrBusy))
	}
	return &pb.SendBackResponse{}, nil
}

// A call that changes the engine, refused as busy (nothing done) and whose
// context ends just before its retry is sent, never reached the broker
// but for the refusal: it gets its context's error alone, which says
// nothing was changed. It was reported ErrIndeterminate, as the first
// attempt's request had left the client.
func TestClient_ChangeRefusedBusyWhoseRetryIsNeverSentIsNotUnknown(t *testing.T) {
	gs := grpc.NewServer()
	b := &busyOnceBroker{}
	pb.RegisterBrokerServer(gs, b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	c, err := Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()

	var cancel atomic.Pointer[context.CancelFunc]
	hook := func() { (*cancel.Load())() }
	testHookBusyRetry.Store(&hook)
	defer testHookBusyRetry.Store(nil)

	for _, call := range []struct {
		name     string
		do       func(ctx context.Context) error
		attempts *atomic.Int64
	}{
		{"CreateTopic", func(ctx context.Context) error { return c.CreateTopic(ctx, "t", 1) }, &b.creates},
		{"SendBack", func(ctx context.Context) error {
			_, err := c.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Attempts: 1})
			return err
		}, &b.sendBacks},
	} {
		ctx, stop := context.WithCancel(context.Background())
		cancel.Store(&stop)
		err := call.do(ctx)
		stop()
		require.Error(t, err, call.name)
		assert.ErrorIs(t, err, context.Canceled, call.name)
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "%s: only its refused attempt reached the broker", call.name)
		assert.Equal(t, int64(1), call.attempts.Load(), "%s: the retry was never sent", call.name)
	}
}
