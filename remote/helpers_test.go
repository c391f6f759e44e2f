package remote_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// openEngine opens an in-memory engine closed when the test ends.
func openEngine(t testing.TB, opts *equeue.Options) *equeue.Engine {
	t.Helper()
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		o.InMemory = true
	}
	e, err := equeue.Open("", &o)
	require.NoError(t, err)
	t.Cleanup(func() {
		err := e.Close()
		if e.StoreFailure() != nil { // Close reports the failed fsync
			require.ErrorIs(t, err, equeue.ErrStoreFailed)
			return
		}
		require.NoError(t, err)
	})
	return e
}

// server is a running remote.Server.
type server struct {
	srv    *remote.Server
	addr   string
	served chan error
	once   sync.Once
}

// startServer serves e on addr ("" means a free loopback port below the
// ephemeral range, so that a restart can listen on it again) until stop or
// the end of the test.
func startServer(t testing.TB, e *equeue.Engine, addr string, opts *remote.ServerOptions) *server {
	t.Helper()
	srv, err := remote.NewServer(e, opts)
	require.NoError(t, err)
	return serve(t, srv, addr)
}

// serve serves srv on addr until stop or the end of the test.
func serve(t testing.TB, srv *remote.Server, addr string) *server {
	t.Helper()
	var lis net.Listener
	if addr == "" {
		lis = testport.Listen(t)
	} else {
		var err error
		lis, err = net.Listen("tcp", addr)
		require.NoError(t, err)
	}
	s := &server{srv: srv, addr: lis.Addr().String(), served: make(chan error, 1)}
	go func() { s.served <- srv.Serve(lis) }()
	t.Cleanup(s.stop)
	return s
}

// stop stops the server at once and waits for Serve to return. Idempotent.
func (s *server) stop() {
	s.once.Do(func() {
		s.srv.Stop()
		<-s.served
	})
}

// dial returns a client of addr closed when the test ends.
func dial(t testing.TB, addr string, opts *remote.ClientOptions) *remote.Client {
	t.Helper()
	c, err := remote.Dial(addr, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// setup starts an in-memory engine, a server on it and a client of it.
func setup(t testing.TB, eopts *equeue.Options) (*equeue.Engine, *remote.Client) {
	t.Helper()
	e := openEngine(t, eopts)
	s := startServer(t, e, "", nil)
	return e, dial(t, s.addr, nil)
}

func ctxT(t testing.TB) context.Context { return ctxWithin(t, 60*time.Second) }

// ctxWithin is a context that ends after d or at the end of the test, for
// a test whose calls, many or large, outlast ctxT's minute on a machine
// loaded with the race detector and other test runs.
func ctxWithin(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually waits for cond with a deadline instead of sleeping. An arg
// of msg that is a func() any is called when the wait times out, so that
// the message reports a value that changes while it waits (a count) as it
// is then, not as it was when the wait began.
func eventually(t testing.TB, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: "+msg, append([]any{within}, atTimeout(args)...)...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// atTimeout returns args with each func() any replaced by what it returns.
func atTimeout(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if f, ok := a.(func() any); ok {
			a = f()
		}
		out[i] = a
	}
	return out
}

func newProducer(t testing.TB, b equeue.Broker) *equeue.Producer {
	t.Helper()
	p, err := equeue.NewProducer(b, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// collector records every delivery: message body -> consumers that handled it.
type collector struct {
	mu sync.Mutex
	by map[string][]string
	n  atomic.Int64
}

func newCollector() *collector { return &collector{by: map[string][]string{}} }

func (c *collector) handler(who string) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		c.mu.Lock()
		c.by[string(m.Body)] = append(c.by[string(m.Body)], who)
		c.mu.Unlock()
		c.n.Add(1)
		return nil
	}
}

func (c *collector) count() int { return int(c.n.Load()) }

func (c *collector) has(body string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by[body]) > 0
}

func (c *collector) snapshot() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]string, len(c.by))
	for k, v := range c.by {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func startConsumer(t testing.TB, b equeue.Broker, o equeue.ConsumerOptions) *equeue.Consumer {
	t.Helper()
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = 200 * time.Millisecond
	}
	if o.CommitInterval == 0 {
		o.CommitInterval = 100 * time.Millisecond
	}
	if o.PullWait == 0 {
		o.PullWait = time.Second
	}
	c, err := equeue.NewConsumer(b, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxT(t)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// serveOwn serves gs, a gRPC server of the test's own on which srv is
// registered, on a loopback port until the test ends, and returns its
// address.
func serveOwn(t *testing.T, srv *remote.Server, gs *grpc.Server) string {
	t.Helper()
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
