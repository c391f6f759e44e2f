package remote_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// lateJoinServer serves e through a gRPC server of the test's own that,
// once hold is set, keeps the next JoinGroup from the engine until release
// is closed and then runs it whatever became of its caller, as a join that
// reached the engine after its client gave up on it. done gets its error.
type lateJoinServer struct {
	hold             atomic.Bool
	entered, release chan struct{}
	done             chan error
}

func serveLateJoin(t *testing.T, e *equeue.Engine) (*lateJoinServer, string) {
	t.Helper()
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	l := &lateJoinServer{entered: make(chan struct{}), release: make(chan struct{}), done: make(chan error, 1)}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod != pb.Broker_JoinGroup_FullMethodName || !l.hold.CompareAndSwap(true, false) {
			return h(ctx, req)
		}
		close(l.entered)
		<-l.release
		resp, err := h(context.WithoutCancel(ctx), req)
		l.done <- err
		return resp, err
	}))
	srv.Register(gs)
	return l, serveOwn(t, srv, gs)
}

// A Consumer removed by a forced DeleteGroup rejoins in the background; a
// Close while that join is on its way leaves first, and the join reaches
// the broker after the leave. It is refused: the member ID is free for
// the next Start at once, and the group can be deleted without Force.
func TestConsumer_JoinArrivingAfterCloseLeavesNoMember(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{SessionTimeout: time.Minute})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	l, addr := serveLateJoin(t, e)
	c := dial(t, addr, nil)
	opts := equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: newCollector().handler("c"), HeartbeatInterval: 100 * time.Millisecond}
	first, err := equeue.NewConsumer(c, opts)
	require.NoError(t, err)
	require.NoError(t, first.Start(ctx))

	l.hold.Store(true)
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
	<-l.entered // the removed consumer's rejoin
	// Its final commit may be refused: it is no member of any group.
	_ = first.Close()
	close(l.release)
	err = <-l.done
	require.Error(t, err, "the join of the consumer that left")
	assert.Contains(t, err.Error(), equeue.ErrNotMember.Error())

	restarted, err := equeue.NewConsumer(c, opts)
	require.NoError(t, err)
	require.NoError(t, restarted.Start(ctx), "the ID is held by the late join")
	require.NoError(t, restarted.Close())
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, gi.Members)
	assert.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), "the group has no member left")
}
