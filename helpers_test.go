package equeue_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// storeKinds runs a test against every store kind the engine ships.
var storeKinds = []string{"badger", "memory"}

// openEngine opens an engine of the given kind in t's temp dir and closes it
// (checking the error) when the test ends. The returned reopen function
// closes the engine and opens a new one on the same data (badger only).
func openEngine(t testing.TB, kind string, opts *equeue.Options) (*equeue.Engine, func() *equeue.Engine) {
	t.Helper()
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	dir := ""
	switch kind {
	case "memory":
		o.InMemory = true
	case "badger":
		dir = t.TempDir()
	default:
		t.Fatalf("unknown store kind %q", kind)
	}
	e, err := equeue.Open(dir, &o)
	require.NoError(t, err)
	cur := e
	var mu sync.Mutex
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, cur.Close())
	})
	reopen := func() *equeue.Engine {
		t.Helper()
		require.Equal(t, "badger", kind, "only a durable store can be reopened")
		mu.Lock()
		defer mu.Unlock()
		require.NoError(t, cur.Close())
		n, err := equeue.Open(dir, &o)
		require.NoError(t, err)
		cur = n
		return n
	}
	return e, reopen
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newProducer(t testing.TB, b equeue.Broker, opts *equeue.ProducerOptions) *equeue.Producer {
	t.Helper()
	p, err := equeue.NewProducer(b, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
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

// countingStore wraps a store, counts calls and can inject write errors.
type countingStore struct {
	equeue.Store
	writes   atomic.Int64
	syncs    atomic.Int64
	failNext atomic.Int64 // fail this many next writes
	corrupt  atomic.Pointer[func(store.QueueID, uint64, []byte) []byte]
}

var errInjected = os.ErrDeadlineExceeded // any distinct error will do

func (s *countingStore) Write(b *store.Batch) error {
	s.writes.Add(1)
	if s.failNext.Load() > 0 {
		s.failNext.Add(-1)
		return errInjected
	}
	return s.Store.Write(b)
}

func (s *countingStore) Sync() error {
	s.syncs.Add(1)
	return s.Store.Sync()
}

func (s *countingStore) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	recs, err := s.Store.Read(q, from, to, max, maxBytes)
	if f := s.corrupt.Load(); f != nil {
		for i := range recs {
			recs[i].Value = (*f)(q, recs[i].Offset, recs[i].Value)
		}
	}
	return recs, err
}

// countTopic counts the queues of topic in refs.
func countTopic(refs []equeue.QueueRef, topic string) int {
	n := 0
	for _, r := range refs {
		if r.Topic == topic {
			n++
		}
	}
	return n
}

// statsOf returns c's queue stats for topic.
func statsOf(c *equeue.Consumer, topic string) []equeue.QueueStat {
	var out []equeue.QueueStat
	for _, q := range c.Queues() {
		if q.Topic == topic {
			out = append(out, q)
		}
	}
	return out
}

// waitWindow waits until the committable offsets of c's queues of topic add
// up to sum: a handler returns before the consumer marks its message
// finished, so counting handled messages is not enough before a commit.
func waitWindow(t testing.TB, c *equeue.Consumer, topic string, sum int64) {
	t.Helper()
	eventually(t, 10*time.Second, func() bool { return committable(c, topic) == sum }, "committable offsets of %s add up to %d", topic, sum)
}

// committable adds up the offsets a commit of c's queues of topic would
// store now.
func committable(c *equeue.Consumer, topic string) int64 {
	var n int64
	for _, q := range statsOf(c, topic) {
		n += q.Committable
	}
	return n
}
