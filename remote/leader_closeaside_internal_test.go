package remote

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// busyUnaryBroker refuses every unary append as busy, and counts them.
type busyUnaryBroker struct {
	pb.UnimplementedBrokerServer
	calls *atomic.Int64
}

func (b busyUnaryBroker) Append(context.Context, *pb.AppendRequest) (*pb.AppendResponse, error) {
	b.calls.Add(1)
	return nil, toStatus(ErrBusy)
}

// An AppendAsync the cluster client runs as Append on a goroutine of its
// own (no leader known: here no node answers) is over when Close returns:
// its callback has run, with equeue.ErrClosed, and none runs later.
func TestClusterClient_CloseWaitsForAppendsRetriedAside(t *testing.T) {
	var calls atomic.Int64
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, busyUnaryBroker{calls: &calls})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()

	cc, err := DialCluster([]string{lis.Addr().String()}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ran atomic.Bool
	errs := make(chan error, 1)
	// No leader known yet: the append runs as Append aside, which retries
	// the busy node until the context or FailoverWait ends.
	cc.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}, func(_ equeue.AppendResult, err error) {
		ran.Store(true)
		errs <- err
	})
	require.Eventually(t, func() bool { return calls.Load() >= 2 }, 30*time.Second, 5*time.Millisecond, "the append is retried")
	require.NoError(t, cc.Close())
	done := ran.Load()
	assert.True(t, done, "the callback ran before Close returned")
	// Closed between two tries (not stored) or during one (unknown).
	err = <-errs
	assert.True(t, errors.Is(err, equeue.ErrClosed) || errors.Is(err, equeue.ErrIndeterminate), "%v", err)

	// After Close, a call is answered at once with ErrClosed.
	cc.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("y")}}}, func(_ equeue.AppendResult, err error) {
		errs <- err
	})
	assert.ErrorIs(t, <-errs, equeue.ErrClosed)
}
