package remote

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// leaderless refuses every Append call and append stream as not the
// leader, naming none, until elected is set: a node of a cluster without a
// leader.
type leaderless struct {
	elected atomic.Bool
	refused atomic.Int64
}

func (l *leaderless) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if info.FullMethod == pb.Broker_Append_FullMethodName && !l.elected.Load() {
		l.refused.Add(1)
		return nil, toStatus(equeue.ErrNotLeader)
	}
	return handler(ctx, req)
}

func (l *leaderless) interceptStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod == pb.Broker_AppendStream_FullMethodName && !l.elected.Load() {
		l.refused.Add(1)
		return toStatus(equeue.ErrNotLeader)
	}
	return handler(srv, ss)
}

// openTopicEngine opens an in-memory engine with a topic "t" of one
// queue, closed when the test ends.
func openTopicEngine(t *testing.T) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(context.Background(), "t", 1))
	return e
}

// serveLeaderless serves e behind a leaderless node until the test ends.
func serveLeaderless(t *testing.T, e *equeue.Engine, l *leaderless) string {
	t.Helper()
	srv, err := NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(append(srv.GRPCServerOptions(), grpc.ChainUnaryInterceptor(l.intercept), grpc.ChainStreamInterceptor(l.interceptStream))...)
	srv.Register(gs)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		gs.Stop()
		<-served
	})
	return lis.Addr().String()
}

// asyncAppends starts n AppendAsync calls of cc, each on a goroutine of its
// own (one may wait for a slot of the window); their outcomes arrive on the
// channel returned.
type asyncOutcome struct {
	res equeue.AppendResult
	err error
}

func asyncAppends(cc *ClusterClient, n int) <-chan asyncOutcome {
	out := make(chan asyncOutcome, n)
	for range n {
		go cc.AppendAsync(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
			func(res equeue.AppendResult, err error) { out <- asyncOutcome{res, err} })
	}
	return out
}

// countSlotWaits counts the AppendAsync calls that found the cluster
// client's window full, until the test ends.
func countSlotWaits(t *testing.T) *atomic.Int64 {
	var waits atomic.Int64
	hook := func() { waits.Add(1) }
	testHookClusterSlotWait.Store(&hook)
	t.Cleanup(func() { testHookClusterSlotWait.Store(nil) })
	return &waits
}

// A ClusterClient that knows no leader ran each AppendAsync as Append on
// a goroutine of its own: a burst during a failover made a goroutine per
// append. Now at most a window of them run; the other calls wait for a
// slot, as they do while the leader is known and the window is full. Once
// a leader answers, every append is stored, once.
func TestClusterClient_AppendsWithoutALeaderHoldTheWindow(t *testing.T) {
	const window, n = 4, 40
	l := &leaderless{}
	addr := serveLeaderless(t, openTopicEngine(t), l)
	cc, err := DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	cc.window = make(chan struct{}, window) // a small window, before any append
	waits := countSlotWaits(t)

	out := asyncAppends(cc, n)
	require.Eventually(t, func() bool { return cc.asideNow.Load()+waits.Load() == n }, time.Minute, time.Millisecond,
		"every call runs aside or waits for a slot")
	require.Eventually(t, func() bool { return l.refused.Load() >= window }, time.Minute, time.Millisecond, "the node refuses them")
	assert.LessOrEqual(t, cc.asidePeak.Load(), int64(window), "appends running aside at once")

	l.elected.Store(true)
	var offsets []int64
	for range n {
		o := <-out
		require.NoError(t, o.err)
		offsets = append(offsets, o.res.FirstOffset)
	}
	slices.Sort(offsets)
	for i, off := range offsets {
		require.Equal(t, int64(i), off, "each append stored once")
	}
	assert.LessOrEqual(t, cc.asidePeak.Load(), int64(window), "appends running aside at once")
	assert.Equal(t, addr, cc.Leader())
}

// With no leader until FailoverWait ends, each append waiting for one
// gets the last refusal, equeue.ErrNotLeader: nothing was stored. The
// calls waiting for a slot each wait their own FailoverWait once they
// have one.
func TestClusterClient_AppendsWithoutALeaderFailAfterFailoverWait(t *testing.T) {
	const window, n = 4, 16
	old := failoverWait
	failoverWait = 200 * time.Millisecond
	t.Cleanup(func() { failoverWait = old })
	l := &leaderless{}
	addr := serveLeaderless(t, openTopicEngine(t), l)
	cc, err := DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	cc.window = make(chan struct{}, window)

	out := asyncAppends(cc, n)
	for range n {
		o := <-out
		require.ErrorIs(t, o.err, equeue.ErrNotLeader)
		require.NotErrorIs(t, o.err, equeue.ErrIndeterminate)
	}
	assert.LessOrEqual(t, cc.asidePeak.Load(), int64(window), "appends running aside at once")
}

// ClusterClient.Close completes the AppendAsync calls waiting for a slot
// and those running aside before it returns: the first with
// equeue.ErrClosed (nothing sent), and no callback runs after it.
func TestClusterClient_CloseCompletesAppendsWaitingForALeader(t *testing.T) {
	const window, n = 2, 6
	l := &leaderless{}
	cc, err := DialCluster([]string{serveLeaderless(t, openTopicEngine(t), l)}, nil)
	require.NoError(t, err)
	cc.window = make(chan struct{}, window)
	waits := countSlotWaits(t)

	// The callback of a call still in AppendAsync (waiting for a slot)
	// waits until Close waits for the calls in progress, or has returned
	// (a late callback): a Close that did not wait for them would return
	// first. Those of the appends running aside, which Close waits for
	// otherwise, do not wait.
	waiting := gateWaitBegins(t, cc.calls)
	closeReturned := make(chan struct{})
	var ran, after, returned atomic.Int64
	errs := make(chan error, n)
	for range n {
		go func() {
			var in atomic.Bool
			in.Store(true)
			cc.AppendAsync(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
				func(_ equeue.AppendResult, err error) {
					if in.Load() {
						select {
						case <-waiting:
						case <-closeReturned:
							after.Add(1)
						}
					}
					ran.Add(1)
					errs <- err
				})
			in.Store(false)
			returned.Add(1)
		}()
	}
	require.Eventually(t, func() bool {
		return cc.asideNow.Load() == window && waits.Load() == n-window && returned.Load() == window
	}, time.Minute, time.Millisecond, "a window of appends runs aside, the others wait for a slot")
	require.Eventually(t, func() bool { return l.refused.Load() >= window }, time.Minute, time.Millisecond, "the node refuses them")
	require.NoError(t, cc.Close())
	assert.Equal(t, int64(n), ran.Load(), "every callback ran before Close returned")
	close(closeReturned)
	assert.Zero(t, after.Load(), "no callback after Close returned")
	closedErrs := 0
	for range n {
		err := <-errs
		require.Error(t, err)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate, "none was sent to a leader")
		if errors.Is(err, equeue.ErrClosed) {
			closedErrs++
		}
	}
	assert.GreaterOrEqual(t, closedErrs, n-window, "the calls waiting for a slot get ErrClosed")
}
