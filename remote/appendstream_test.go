package remote_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
	"github.com/equeue-go/equeue/store"
)

// callCounts counts the calls a server received, by method.
type callCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounts) add(m string) {
	c.mu.Lock()
	c.n[m]++
	c.mu.Unlock()
}

func (c *callCounts) get(m string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[m]
}

// countedServer serves e on a gRPC server that counts unary calls and
// streams; streams false registers the Broker service without its streaming
// RPC, as an older server would.
func countedServer(t *testing.T, e *equeue.Engine, streams bool) (string, *callCounts) {
	t.Helper()
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	counts := &callCounts{n: map[string]int{}}
	gs := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			counts.add(info.FullMethod)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			counts.add(info.FullMethod)
			return h(srv, ss)
		}))
	if streams {
		srv.Register(gs)
	} else {
		remote.RegisterWithoutStreams(srv, gs)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		gs.Stop()
		<-served
	})
	return lis.Addr().String(), counts
}

// gatedStore is a store whose Writes wait while its gate is closed
// (hold), counting the Writes that wait.
type gatedStore struct {
	*faultstore.FS
	mu      sync.Mutex
	open    chan struct{}
	waiting atomic.Int64
}

// gatedEngine opens an engine on a gated store; the gate is opened when
// the test ends, before the engine closes.
func gatedEngine(t *testing.T) (*gatedStore, *equeue.Engine) {
	g := &gatedStore{FS: faultstore.New(store.NewMemory()), open: make(chan struct{})}
	close(g.open)
	g.OnWrite(func(*store.Batch) error {
		g.mu.Lock()
		gate := g.open
		g.mu.Unlock()
		g.waiting.Add(1)
		<-gate
		g.waiting.Add(-1)
		return nil
	})
	e := openEngine(t, &equeue.Options{Store: g})
	t.Cleanup(g.release) // cleanups run last first: before the engine's Close
	return g, e
}

func (g *gatedStore) hold() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedStore) release() {
	g.mu.Lock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
	g.mu.Unlock()
}

// storedBodies reads every message of topic t (one queue).
func storedBodies(t *testing.T, e *equeue.Engine, topic string) map[string]bool {
	t.Helper()
	ctx := ctxT(t)
	out := map[string]bool{}
	off := int64(0)
	for {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Offset: off, Max: 512})
		require.NoError(t, err)
		for _, m := range res.Messages {
			out[string(m.Body)] = true
		}
		if len(res.Messages) == 0 {
			return out
		}
		off = res.NextOffset
	}
}

// Many SendAsync calls over remote travel on one AppendStream call, not
// one Append call (and goroutine) each, and every one is stored once.
func TestAppendStream_SendAsyncPipelinesOnOneStream(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	addr, counts := countedServer(t, e, true)
	p := newProducer(t, dial(t, addr, nil))

	const n = 2000
	fs := make([]*equeue.SendFuture, n)
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	seen := map[equeue.QueueRef]map[int64]bool{}
	for i, f := range fs {
		res, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
		ref := equeue.QueueRef{Topic: "t", Queue: res.Queue}
		if seen[ref] == nil {
			seen[ref] = map[int64]bool{}
		}
		assert.False(t, seen[ref][res.Offset], "offset %v/%d given twice", ref, res.Offset)
		seen[ref][res.Offset] = true
	}
	assert.Equal(t, 1, counts.get(pb.Broker_AppendStream_FullMethodName))
	assert.Equal(t, 0, counts.get(pb.Broker_Append_FullMethodName))
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	total := int64(0)
	for _, q := range info.Queues {
		total += q.MaxOffset
	}
	assert.Equal(t, int64(n), total)
}

// A server without AppendStream (an older version) answers Unimplemented:
// the client falls back to unary Append calls and the sends succeed.
func TestAppendStream_FallsBackToUnaryOnOldServers(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr, counts := countedServer(t, e, false)
	p := newProducer(t, dial(t, addr, nil))
	const n = 50
	fs := make([]*equeue.SendFuture, n)
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	for i, f := range fs {
		_, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
	}
	assert.Equal(t, n, counts.get(pb.Broker_Append_FullMethodName))
	assert.Len(t, storedBodies(t, e, "t"), n)
}

// A server killed with sends in flight: every send reports stored (and is),
// not stored (and is not), or ErrIndeterminate; those the broker had read
// are indeterminate, never "not stored".
func TestAppendStream_KilledServerLeavesInFlightIndeterminate(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	p := newProducer(t, c)

	// Some sends stored and answered before the kill.
	for i := range 10 {
		_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint("before-", i))}).Result(ctx)
		require.NoError(t, err)
	}
	gs.hold()
	const n = 200
	fs := make([]*equeue.SendFuture, n)
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "no write reached the store")
	s.stop()
	errs := make([]error, n)
	indeterminate := 0
	for i, f := range fs {
		_, errs[i] = f.Result(ctx)
		require.Error(t, errs[i], "send %d answered although its write never finished", i)
		if errors.Is(errs[i], equeue.ErrIndeterminate) {
			indeterminate++
		} else {
			assert.ErrorIs(t, errs[i], remote.ErrUnavailable, "send %d", i)
		}
	}
	assert.Positive(t, indeterminate, "the send whose write was waiting was in flight")
	gs.release()
	stored := storedBodies(t, e, "t")
	for i, err := range errs {
		if stored[fmt.Sprint(i)] {
			assert.ErrorIs(t, err, equeue.ErrIndeterminate, "send %d is stored but was reported as not stored", i)
		}
	}
}

// Cancelling one send does not break the others on the stream: the
// cancelled one, already at the broker, is reported unknown.
func TestAppendStream_CancelOneSendOnly(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	p := newProducer(t, dial(t, s.addr, nil))
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("warm")}).Result(ctx)
	require.NoError(t, err)

	gs.hold()
	actx, cancel := context.WithCancel(ctx)
	a := p.SendAsync(actx, &equeue.Message{Topic: "t", Body: []byte("a")})
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "a never reached the store")
	b := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("b")})
	cancel()
	_, err = a.Result(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "a was at the broker: its outcome is unknown")
	gs.release()
	_, err = b.Result(ctx)
	require.NoError(t, err)
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("c")}).Result(ctx)
	require.NoError(t, err)
	assert.Len(t, storedBodies(t, e, "t"), 4, "a was written: the cancel came after the broker read it")
}

// Rights are checked per append as for the unary Append: a consume-only
// token is refused and nothing is stored; no token is unauthenticated.
func TestAppendStream_Rights(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"produce-tok": remote.RightProduce, "consume-tok": remote.RightConsume, "admin-tok": remote.RightAdmin}})
	send := func(c *remote.Client) error {
		_, err := newProducer(t, c).SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
		return err
	}
	assert.ErrorIs(t, send(dial(t, s.addr, &remote.ClientOptions{Token: "consume-tok"})), remote.ErrPermissionDenied)
	assert.ErrorIs(t, send(dial(t, s.addr, &remote.ClientOptions{Token: "admin-tok"})), remote.ErrPermissionDenied)
	assert.ErrorIs(t, send(dial(t, s.addr, &remote.ClientOptions{Token: "guess"})), remote.ErrUnauthenticated)
	assert.ErrorIs(t, send(dial(t, s.addr, nil)), remote.ErrUnauthenticated)
	assert.Empty(t, storedBodies(t, e, "t"))
	require.NoError(t, send(dial(t, s.addr, &remote.ClientOptions{Token: "produce-tok"})))
	assert.Len(t, storedBodies(t, e, "t"), 1)
}

// A message over the server's limit is refused as by the unary Append
// (nothing stored) and the stream carries on.
func TestAppendStream_TooLargeIsRefusedAndStreamGoesOn(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxMessageBytes: 64 << 10})
	c := dial(t, s.addr, nil)
	p := newProducer(t, c)
	big := make([]byte, 100<<10)
	_, uerr := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: big}}})
	require.ErrorIs(t, uerr, equeue.ErrMessageTooLarge)
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("small")}).Result(ctx)
	require.NoError(t, err)
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: big}).Result(ctx)
	require.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate)
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("after")}).Result(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"small": true, "after": true}, storedBodies(t, e, "t"))
}

// Busy refusals are retried as on the unary path: with one call in flight
// at a time and slow writes, every send still gets through.
func TestAppendStream_BusyIsRetried(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: 1})
	// One client keeps within the server's limit (its stream window); two
	// together pass it.
	ps := []*equeue.Producer{newProducer(t, dial(t, s.addr, nil)), newProducer(t, dial(t, s.addr, nil))}
	fs.Delay(2*time.Millisecond, 0)
	const n = 20
	futs := make([]*equeue.SendFuture, n)
	for i := range futs {
		futs[i] = ps[i%2].SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	for i, f := range futs {
		_, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
	}
	assert.Len(t, storedBodies(t, e, "t"), n)
}

// GracefulStop answers what the broker read (nothing is left unknown),
// ends the stream, and later sends fail as not stored.
func TestAppendStream_GracefulStopAnswersInFlight(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	p := newProducer(t, dial(t, s.addr, nil))
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("warm")}).Result(ctx)
	require.NoError(t, err)

	gs.hold()
	const n = 50
	fs := make([]*equeue.SendFuture, n)
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "no write reached the store")
	stopped := make(chan struct{})
	go func() {
		s.srv.GracefulStop()
		close(stopped)
	}()
	gs.release()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("GracefulStop did not return")
	}
	stored := storedBodies(t, e, "t")
	for i, f := range fs {
		_, err := f.Result(ctx)
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "send %d", i)
		assert.Equal(t, err == nil, stored[fmt.Sprint(i)], "send %d: %v", i, err)
	}
	_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("late")}).Result(ctx)
	assert.ErrorIs(t, err, remote.ErrUnavailable)
	s.stop()
}

// Client.Close ends the pipe: sends after it get ErrClosed, and no
// goroutine is left (goleak).
func TestAppendStream_CloseEndsThePipe(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	c, err := remote.Dial(s.addr, nil)
	require.NoError(t, err)
	done := make(chan error, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	require.NoError(t, <-done)
	require.NoError(t, c.Close())
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("y")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	assert.ErrorIs(t, <-done, equeue.ErrClosed)
}

// One client keeps within the server's MaxInFlight (the stream's window),
// so it is never refused as busy: its sends to one queue are stored in the
// order they were made.
func TestAppendStream_WindowKeepsOneClientWithinMaxInFlight(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: 3})
	p := newProducer(t, dial(t, s.addr, nil))
	fs.Delay(time.Millisecond, 0)
	const n = 100
	futs := make([]*equeue.SendFuture, n)
	for i := range futs {
		futs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	for i, f := range futs {
		res, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
		assert.Equal(t, int64(i), res.Offset, "send %d", i)
	}
}

// Sends waiting for room in a full window when the stream breaks are not
// left waiting: they go on a new stream, or fail as not stored when the
// broker is gone.
func TestAppendStream_QueuedSendsEndWhenTheStreamBreaks(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: 4})
	p := newProducer(t, dial(t, s.addr, nil))
	_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("warm")}).Result(ctx)
	require.NoError(t, err)
	gs.hold()
	const n = 50
	fs := make([]*equeue.SendFuture, n)
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "no write reached the store")
	s.stop()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	unavailable := 0
	for i, f := range fs {
		_, err := f.Result(wctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "send %d never ended", i)
		require.Error(t, err, "send %d", i)
		if !errors.Is(err, equeue.ErrIndeterminate) {
			assert.ErrorIs(t, err, remote.ErrUnavailable, "send %d", i)
			unavailable++
		}
	}
	// Each stream carries at most a window (4) of sends. Sends queued behind
	// it go on a new stream once the first breaks, and while the server is
	// stopping such a stream may still reach it (CI saw 8 indeterminate
	// once): most sends must still be known as never sent.
	assert.GreaterOrEqual(t, unavailable, n-3*4, "at most a few windows of sends reached the broker")
}
