package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// collector records every delivery by consumer, keyed by message ID.
type collector struct {
	mu    sync.Mutex
	by    map[string][]string // message ID -> consumers that handled it
	order map[string][]string // consumer -> bodies in handling order
	n     atomic.Int64
}

func newCollector() *collector {
	return &collector{by: map[string][]string{}, order: map[string][]string{}}
}

func (c *collector) handler(who string) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		c.mu.Lock()
		c.by[m.ID] = append(c.by[m.ID], who)
		c.order[who] = append(c.order[who], string(m.Body))
		c.mu.Unlock()
		c.n.Add(1)
		return nil
	}
}

func (c *collector) count() int { return int(c.n.Load()) }

// distinct counts the messages handled, each once however often it was
// delivered.
func (c *collector) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
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
	c, err := equeue.NewConsumer(b, o)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxT(t)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConsumer_BadOptions(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ok := func(context.Context, *equeue.Message) error { return nil }
	sub := []equeue.Subscription{{Topic: "t"}}
	cases := map[string]struct {
		o    equeue.ConsumerOptions
		want error
	}{
		"no group":     {equeue.ConsumerOptions{Subscriptions: sub, Handler: ok}, equeue.ErrInvalidName},
		"bad group":    {equeue.ConsumerOptions{Group: "a b", Subscriptions: sub, Handler: ok}, equeue.ErrInvalidName},
		"nil handler":  {equeue.ConsumerOptions{Group: "g", Subscriptions: sub}, equeue.ErrInvalidOptions},
		"no subs":      {equeue.ConsumerOptions{Group: "g", Handler: ok}, equeue.ErrInvalidOptions},
		"bad filter":   {equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: "||"}}, Handler: ok}, equeue.ErrInvalidFilter},
		"bad model":    {equeue.ConsumerOptions{Group: "g", Subscriptions: sub, Handler: ok, Model: 7}, equeue.ErrInvalidOptions},
		"neg conc":     {equeue.ConsumerOptions{Group: "g", Subscriptions: sub, Handler: ok, Concurrency: -1}, equeue.ErrInvalidOptions},
		"huge batch":   {equeue.ConsumerOptions{Group: "g", Subscriptions: sub, Handler: ok, PullBatch: 5000}, equeue.ErrInvalidOptions},
		"bad topic":    {equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "a/b"}}, Handler: ok}, equeue.ErrInvalidName},
		"neg interval": {equeue.ConsumerOptions{Group: "g", Subscriptions: sub, Handler: ok, CommitInterval: -time.Second}, equeue.ErrInvalidOptions},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := equeue.NewConsumer(e, c.o)
			assert.ErrorIs(t, err, c.want)
		})
	}
	_, err := equeue.NewConsumer(nil, equeue.ConsumerOptions{Group: "g", Subscriptions: sub, Handler: ok})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)

	// Start on an unknown topic fails clearly and leaves nothing running.
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "nope"}}, Handler: ok})
	require.NoError(t, err)
	assert.ErrorIs(t, c.Start(ctxT(t)), equeue.ErrTopicNotFound)
	require.NoError(t, c.Close())
	assert.ErrorIs(t, c.Start(ctxT(t)), equeue.ErrClosed)
}

func TestConsumer_ClusteringSharesQueuesByAverage(t *testing.T) {
	forTransports(t, testConsumer_ClusteringSharesQueuesByAverage)
}

func testConsumer_ClusteringSharesQueuesByAverage(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 8))
	col := newCollector()
	for _, id := range []string{"c1", "c2", "c3"} {
		startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col.handler(id), From: equeue.ConsumeFromEarliest})
	}
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		if len(gi.Members) != 3 {
			return false
		}
		got := map[string][]int{}
		for _, m := range gi.Members {
			for _, q := range m.Queues {
				if q.Topic == "t" {
					got[m.ID] = append(got[m.ID], q.Queue)
				}
			}
		}
		return fmt.Sprint(got) == fmt.Sprint(map[string][]int{"c1": {0, 1, 2}, "c2": {3, 4, 5}, "c3": {6, 7}})
	}, "8 queues over 3 consumers must be [0,1,2] [3,4,5] [6,7]")

	p := newProducer(t, b, nil)
	sent := sendN(t, p, "t", 0, nil)
	for i := range 400 {
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
		sent = append(sent, r)
	}
	eventually(t, 20*time.Second, func() bool { return col.count() >= 400 }, "all delivered")
	snap := col.snapshot()
	owners := map[int]string{0: "c1", 1: "c1", 2: "c1", 3: "c2", 4: "c2", 5: "c2", 6: "c3", 7: "c3"}
	for _, r := range sent {
		require.Len(t, snap[r.ID], 1, "message %s delivered once", r.ID)
		assert.Equal(t, owners[r.Queue], snap[r.ID][0])
	}
}

func TestConsumer_SubscriptionMismatchRejected(t *testing.T) {
	forTransports(t, testConsumer_SubscriptionMismatchRejected)
}

func testConsumer_SubscriptionMismatchRejected(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "a", 2))
	require.NoError(t, e.CreateTopic(ctx, "b", 2))
	col := newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "1", Subscriptions: []equeue.Subscription{{Topic: "a", Filter: "X"}}, Handler: col.handler("1")})
	for name, o := range map[string]equeue.ConsumerOptions{
		"other topic":  {Subscriptions: []equeue.Subscription{{Topic: "b"}}},
		"other filter": {Subscriptions: []equeue.Subscription{{Topic: "a", Filter: "Y"}}},
		"extra topic":  {Subscriptions: []equeue.Subscription{{Topic: "a", Filter: "X"}, {Topic: "b"}}},
		"broadcast":    {Subscriptions: []equeue.Subscription{{Topic: "a", Filter: "X"}}, Model: equeue.Broadcasting},
	} {
		t.Run(name, func(t *testing.T) {
			o.Group, o.ID, o.Handler = "g", "2", col.handler("2")
			c, err := equeue.NewConsumer(b, o)
			require.NoError(t, err)
			err = c.Start(ctx)
			assert.ErrorIs(t, err, equeue.ErrSubscriptionMismatch)
			require.NoError(t, c.Close())
		})
	}
	// The same subscription written differently is the same subscription.
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "3", Subscriptions: []equeue.Subscription{{Topic: "a", Filter: " X "}}, Handler: col.handler("3")})
}

// TestConsumer_HandoffNoLossNoDuplicates runs a group under continuous
// production while members join and leave: every message must be handled
// exactly once.
func TestConsumer_HandoffNoLossNoDuplicates(t *testing.T) {
	for _, c := range []struct{ kind, tr string }{{"badger", "inproc"}, {"memory", "inproc"}, {"memory", "remote"}, {"badger", clusterTransport}} {
		t.Run(c.kind+"/"+c.tr, func(t *testing.T) {
			clusterSuiteOnly(t, c.tr)
			ctx := ctxT(t)
			e, b := openOver(t, c.tr, c.kind, &equeue.Options{Sync: equeue.SyncNever})
			require.NoError(t, e.CreateTopic(ctx, "t", 8))
			col := newCollector()
			opts := func(id string) equeue.ConsumerOptions {
				return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Handler: func(ctx context.Context, m *equeue.Message) error {
						time.Sleep(time.Duration(m.Offset%3) * time.Millisecond) // keep work in flight during handoffs
						return col.handler(id)(ctx, m)
					}, Concurrency: 4, From: equeue.ConsumeFromEarliest, CommitInterval: 50 * time.Millisecond}
			}
			consumers := map[string]*equeue.Consumer{}
			for _, id := range []string{"c1", "c2", "c3"} {
				consumers[id] = startConsumer(t, b, opts(id))
			}
			p := newProducer(t, b, nil)
			var sent []string
			var sentMu sync.Mutex
			stop := make(chan struct{})
			prodDone := make(chan struct{})
			go func() {
				defer close(prodDone)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					r, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint(i % 50)}, Body: fmt.Appendf(nil, "%d", i)})
					if !assert.NoError(t, err) {
						return
					}
					sentMu.Lock()
					sent = append(sent, r.ID)
					sentMu.Unlock()
					if i%20 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			sentCount := func() int {
				sentMu.Lock()
				defer sentMu.Unlock()
				return len(sent)
			}
			// Each phase lasts at least 150 ms and sees at least 20 sends, so
			// every membership change happens under load however slow the machine.
			step := func() {
				base := sentCount()
				time.Sleep(150 * time.Millisecond)
				eventually(t, 30*time.Second, func() bool { return sentCount() >= base+20 }, "the producer keeps producing")
			}
			step()
			consumers["c4"] = startConsumer(t, b, opts("c4"))
			step()
			require.NoError(t, consumers["c2"].Close())
			step()
			consumers["c5"] = startConsumer(t, b, opts("c5"))
			step()
			require.NoError(t, consumers["c1"].Close())
			step()
			consumers["c6"] = startConsumer(t, b, opts("c6"))
			step()
			require.NoError(t, consumers["c4"].Close())
			step()
			close(stop)
			<-prodDone
			total := sentCount()
			eventually(t, 30*time.Second, func() bool { return col.count() >= total }, "delivered %d of %d", func() any { return col.count() }, total)
			time.Sleep(100 * time.Millisecond) // let any duplicate show up
			snap := col.snapshot()
			for _, id := range sent {
				require.Len(t, snap[id], 1, "message %s handled by %v", id, snap[id])
			}
			assert.Equal(t, total, col.count(), "no duplicate deliveries")
		})
	}
}

// TestConsumer_CrashRedeliversOnlyUncommitted abandons a consumer without a
// commit; the next owner must get exactly what it had not committed.
func TestConsumer_CrashRedeliversOnlyUncommitted(t *testing.T) {
	forTransports(t, testConsumer_CrashRedeliversOnlyUncommitted)
}

// crashSession is the session timeout of the crash test: b takes a's queues
// over only once a's session has run out, so it is short, but it outlasts
// the gaps between heartbeats of a loaded machine (tests under -race beside
// others): 300 ms did not, over a cluster, and a member that expires before
// its commit handles what it had not committed again.
const crashSession = 2 * time.Second

func testConsumer_CrashRedeliversOnlyUncommitted(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "badger", &equeue.Options{SessionTimeout: crashSession})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, b, nil)
	colA := newCollector()
	a := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: colA.handler("a"), CommitInterval: time.Hour, From: equeue.ConsumeFromEarliest})
	// What a handles is counted once per message: should its session lapse
	// all the same, it gets its queues back from the committed offset and
	// handles what it had not committed again, as it should.
	first := sendN(t, p, "t", 100, nil)
	eventually(t, 10*time.Second, func() bool { return colA.distinct() == 100 }, "a handled the first 100")
	// The commit is retried until the group's stored offsets hold it: a
	// commit fenced by such a lapse fails, and one of the queues granted
	// again before a handled them again has nothing to commit.
	eventually(t, 10*time.Second, func() bool {
		return committable(a, "t") == 100 && a.Commit(ctx) == nil && committed(ctx, t, e, "g") == 100
	}, "a committed the first 100")
	second := sendN(t, p, "t", 50, nil)
	eventually(t, 10*time.Second, func() bool { return colA.distinct() == 150 }, "a handled 50 more")
	equeue.CrashConsumer(a) // no commit, no leave

	colB := newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "b", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: colB.handler("b"), From: equeue.ConsumeFromEarliest})
	third := sendN(t, p, "t", 20, nil)
	eventually(t, 15*time.Second, func() bool { return colB.count() >= 70 }, "b took over after a's session expired")
	time.Sleep(100 * time.Millisecond)
	got := colB.snapshot()
	assert.Len(t, got, 70)
	for _, r := range first {
		assert.NotContains(t, got, r.ID, "committed message redelivered")
	}
	for _, r := range append(second, third...) {
		assert.Len(t, got[r.ID], 1, "uncommitted or new message %s", r.ID)
	}
}

// committed adds up the offsets group has stored in e.
func committed(ctx context.Context, t testing.TB, e *equeue.Engine, group string) int64 {
	offs, err := e.GroupOffsets(ctx, group)
	require.NoError(t, err)
	var n int64
	for _, o := range offs {
		n += o
	}
	return n
}

func TestConsumer_BroadcastAndResume(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	p := newProducer(t, e, nil)
	cols := map[string]*collector{"x": newCollector(), "y": newCollector()}
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "bc", ID: id, Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: cols[id].handler(id), From: equeue.ConsumeFromEarliest}
	}
	x := startConsumer(t, e, opts("x"))
	startConsumer(t, e, opts("y"))
	sendN(t, p, "t", 60, nil)
	for id, c := range cols {
		eventually(t, 10*time.Second, func() bool { return c.count() == 60 }, "%s got every message", id)
	}
	require.NoError(t, x.Close())
	sendN(t, p, "t", 30, nil)
	eventually(t, 10*time.Second, func() bool { return cols["y"].count() == 90 }, "y got the later messages")

	// x restarts on a reopened engine and resumes where it stopped.
	e = reopen()
	p = newProducer(t, e, nil)
	x2col := newCollector()
	o := opts("x")
	o.Handler = x2col.handler("x")
	startConsumer(t, e, o)
	sendN(t, p, "t", 10, nil)
	eventually(t, 10*time.Second, func() bool { return x2col.count() == 40 }, "x resumed: 30 missed + 10 new, got %d", func() any { return x2col.count() })
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, 40, x2col.count())
}

func TestConsumer_GroupsAreIsolated(t *testing.T) { forTransports(t, testConsumer_GroupsAreIsolated) }

func testConsumer_GroupsAreIsolated(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	c1, c2 := newCollector(), newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g1", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: c1.handler("g1")})
	g2 := startConsumer(t, b, equeue.ConsumerOptions{Group: "g2", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: c2.handler("g2")})
	p := newProducer(t, b, nil)
	sendN(t, p, "t", 100, nil)
	eventually(t, 10*time.Second, func() bool { return c1.count() == 100 && c2.count() == 100 }, "both groups get everything")
	require.NoError(t, g2.Close())
	sendN(t, p, "t", 10, nil)
	eventually(t, 10*time.Second, func() bool { return c1.count() == 110 }, "g1 continues")
	gi, err := e.Group(ctx, "g2")
	require.NoError(t, err)
	var lag int64
	for _, q := range gi.Queues {
		lag += q.Lag
	}
	assert.Equal(t, int64(10), lag, "g2's own offsets show its lag")
	gi, err = e.Group(ctx, "g1")
	require.NoError(t, err)
	assert.Len(t, gi.Members, 1)
}

func TestConsumer_OrderlyKeepsOrderAndRetriesInPlace(t *testing.T) {
	forTransports(t, testConsumer_OrderlyKeepsOrderAndRetriesInPlace)
}

func testConsumer_OrderlyKeepsOrderAndRetriesInPlace(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	var mu sync.Mutex
	seen := map[string][]int{}
	failed := map[string]bool{}
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Orderly: true,
		RetryDelay: 10 * time.Millisecond, From: equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			var n int
			fmt.Sscan(string(m.Body), &n)
			if n%7 == 3 && !failed[m.ID] {
				failed[m.ID] = true
				return errors.New("first attempt fails")
			}
			seen[m.Keys[0]] = append(seen[m.Keys[0]], n)
			return nil
		}})
	p := newProducer(t, b, nil)
	for i := range 200 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint("k", i%5)}, Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, v := range seen {
			n += len(v)
		}
		return n == 200
	}, "all handled")
	mu.Lock()
	defer mu.Unlock()
	for k, v := range seen {
		assert.True(t, sort.IntsAreSorted(v), "key %s out of order: %v", k, v)
	}
}

func TestConsumer_FailuresRetryThenDeadLetter(t *testing.T) {
	forTransports(t, testConsumer_FailuresRetryThenDeadLetter)
}

func testConsumer_FailuresRetryThenDeadLetter(t *testing.T, tr string) {
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprintf("orderly=%v", orderly), func(t *testing.T) {
			ctx := ctxT(t)
			e, b := openOver(t, tr, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var attempts sync.Map
			okCol := newCollector()
			startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Orderly: orderly,
				RetryDelay: 5 * time.Millisecond, RetryDelays: []time.Duration{5 * time.Millisecond}, MaxAttempts: 3, From: equeue.ConsumeFromEarliest,
				Handler: func(ctx context.Context, m *equeue.Message) error {
					v, _ := attempts.LoadOrStore(m.ID, new(atomic.Int32))
					n := v.(*atomic.Int32).Add(1)
					switch string(m.Body) {
					case "poison":
						return errors.New("always fails")
					case "panics":
						panic("boom")
					case "flaky":
						if n < 2 {
							return errors.New("once")
						}
					}
					return okCol.handler("c")(ctx, m)
				}})
			p := newProducer(t, b, nil)
			for _, b := range []string{"a", "poison", "flaky", "panics", "b"} {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(b), Properties: map[string]string{"p": b}})
				require.NoError(t, err)
			}
			eventually(t, 10*time.Second, func() bool { return okCol.count() == 3 }, "a, flaky, b succeed")
			eventually(t, 10*time.Second, func() bool {
				info, err := e.Topic(ctx, equeue.DLQTopic("g"))
				return err == nil && info.Queues[0].MaxOffset == 2
			}, "poison and panics dead-lettered")
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: equeue.DLQTopic("g")})
			require.NoError(t, err)
			require.Len(t, res.Messages, 2)
			bodies := []string{string(res.Messages[0].Body), string(res.Messages[1].Body)}
			sort.Strings(bodies)
			assert.Equal(t, []string{"panics", "poison"}, bodies)
			for _, m := range res.Messages {
				assert.Equal(t, "t", m.SysProperty(equeue.SysOriginTopic))
				assert.NotEmpty(t, m.SysProperty(equeue.SysLastError))
				assert.Equal(t, string(m.Body), m.Properties["p"], "user properties travel with the dead letter")
				assert.Equal(t, 3, m.Attempt)
			}
			eventually(t, 10*time.Second, func() bool {
				c := startedCommit(t, e, "g")
				return c == 5
			}, "the queue is not stuck behind the poison message; committed %d", func() any { return startedCommit(t, e, "g") })
		})
	}
}

// startedCommit returns the committed offset of queue 0 of topic t in group.
func startedCommit(t testing.TB, e *equeue.Engine, group string) int64 {
	gi, err := e.Group(context.Background(), group)
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" && q.Queue == 0 {
			return q.Committed
		}
	}
	return -1
}
