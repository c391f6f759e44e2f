package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// jobLedger records every handler run of a work queue: for each job, the
// attempt numbers it was run with and how many runs succeeded.
type jobLedger struct {
	mu       sync.Mutex
	attempts map[string][]int
	ok       map[string]int
	runs     atomic.Int64
}

func newJobLedger() *jobLedger {
	return &jobLedger{attempts: map[string][]int{}, ok: map[string]int{}}
}

func (l *jobLedger) record(job string, attempt int, success bool) {
	l.mu.Lock()
	l.attempts[job] = append(l.attempts[job], attempt)
	if success {
		l.ok[job]++
	}
	l.mu.Unlock()
	l.runs.Add(1)
}

func (l *jobLedger) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok)
}

// check asserts that every job succeeded exactly once and was otherwise run
// only for its counted retries: attempts 0, 1, ... k, each once.
func (l *jobLedger) check(t *testing.T, jobs int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.ok, jobs, "jobs that succeeded")
	for job, as := range l.attempts {
		assert.Equal(t, 1, l.ok[job], "job %s succeeded %d times (attempts %v)", job, l.ok[job], as)
		for i, a := range as {
			if !assert.Equal(t, i, a, "job %s: runs by attempt %v; a repeated attempt is a duplicate", job, as) {
				break
			}
		}
	}
}

// groupLag sums the lag of every queue of a group.
func groupLag(t testing.TB, e *equeue.Engine, group string) int64 {
	gi, err := e.Group(context.Background(), group)
	require.NoError(t, err)
	var lag int64
	for _, q := range gi.Queues {
		lag += q.Lag
	}
	return lag
}

// TestConsumer_WorkQueueCloseUnderLoadNoDuplicates: three workers, one job
// in two failing once, all three closed while they are busy, then restarted.
// Every job is handled successfully exactly once; the only other runs are
// its counted retries (a handler that fails while Close waits is a counted
// attempt and goes to the retry topic, so the final commit passes it).
func TestConsumer_WorkQueueCloseUnderLoadNoDuplicates(t *testing.T) {
	forTransports(t, testConsumer_WorkQueueCloseUnderLoadNoDuplicates)
}

func testConsumer_WorkQueueCloseUnderLoadNoDuplicates(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 4))
	const jobs = 300
	ledger := newJobLedger()
	handler := func(ctx context.Context, m *equeue.Message) error {
		job := string(m.Body)
		select {
		case <-time.After(2 * time.Millisecond): // the work
		case <-ctx.Done():
			ledger.record(job, m.Attempt, false)
			return ctx.Err()
		}
		var n int
		_, _ = fmt.Sscanf(job, "job-%d", &n)
		if n%2 == 1 && m.Attempt == 0 {
			ledger.record(job, m.Attempt, false)
			return errors.New("transient failure")
		}
		ledger.record(job, m.Attempt, true)
		return nil
	}
	start := func() []*equeue.Consumer {
		var cs []*equeue.Consumer
		for _, id := range []string{"w1", "w2", "w3"} {
			cs = append(cs, startConsumer(t, b, equeue.ConsumerOptions{Group: "work", ID: id,
				Subscriptions: []equeue.Subscription{{Topic: "jobs"}}, From: equeue.ConsumeFromEarliest,
				Concurrency: 8, RetryDelays: []time.Duration{20 * time.Millisecond}, Handler: handler}))
		}
		return cs
	}
	closeAll := func(cs []*equeue.Consumer) {
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				assert.NoError(t, c.Close())
			}()
		}
		wg.Wait()
	}
	cs := start()
	p := newProducer(t, b, nil)
	for i := range jobs {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: fmt.Appendf(nil, "job-%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, func() bool { return ledger.runs.Load() >= jobs/3 }, "a third of the jobs run")
	closeAll(cs) // under load: handlers are running
	cs = start()
	eventually(t, 60*time.Second, func() bool { return ledger.succeeded() == jobs }, "every job succeeds (%d of %d)", func() any { return ledger.succeeded() }, jobs)
	eventually(t, 30*time.Second, func() bool { return groupLag(t, e, "work") == 0 }, "the group has no lag")
	closeAll(cs)
	ledger.check(t, jobs)
}

// TestConsumer_CloseReturnsDespiteAHandlerIgnoringItsContext: a handler that
// ignores its context outlives both of Close's waits. Close gives up on it,
// as documented: it commits what was handled, leaves the group and returns,
// instead of waiting for the handler without end; the message stays
// uncommitted and the next consumer of the group gets it again. For each
// handler mode.
func TestConsumer_CloseReturnsDespiteAHandlerIgnoringItsContext(t *testing.T) {
	modes := map[string]func(o *equeue.ConsumerOptions, h equeue.Handler){
		"concurrent": func(o *equeue.ConsumerOptions, h equeue.Handler) { o.Handler = h },
		"orderly":    func(o *equeue.ConsumerOptions, h equeue.Handler) { o.Handler, o.Orderly = h, true },
		"batch": func(o *equeue.ConsumerOptions, h equeue.Handler) {
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error { return h(ctx, msgs[0]) }
		},
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("job")}}})
			require.NoError(t, err)
			running := make(chan struct{}, 1)
			release := make(chan struct{})
			o := equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				ShutdownTimeout: 20 * time.Millisecond, CommitInterval: time.Hour}
			mode(&o, func(context.Context, *equeue.Message) error {
				running <- struct{}{}
				<-release // ignores its context
				return nil
			})
			c := startConsumer(t, e, o)
			select {
			case <-running:
			case <-ctx.Done():
				t.Fatal("the handler did not start")
			}
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			select {
			case err := <-closed:
				assert.ErrorIs(t, err, equeue.ErrHandlerAbandoned, "Close reports the handler it gave up on")
			case <-time.After(10 * time.Second): // both waits are 20 ms: it hangs
				close(release)
				t.Fatalf("Close waits for a handler that ignores its context (Close: %v)", <-closed)
			}
			assert.Equal(t, int64(0), startedCommit(t, e, "g"), "the message whose handler was given up on stays uncommitted")
			close(release) // the handler returns; its late result is ignored

			got := make(chan string, 1)
			o = equeue.ConsumerOptions{Group: "g", ID: "b", Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: time.Hour}
			mode(&o, func(_ context.Context, m *equeue.Message) error {
				select {
				case got <- string(m.Body):
				default:
				}
				return nil
			})
			startConsumer(t, e, o)
			select {
			case body := <-got:
				assert.Equal(t, "job", body, "the next consumer gets the message again")
			case <-ctx.Done():
				t.Fatal("the message was not delivered again")
			}
		})
	}
}

// TestConsumer_CloseReturnsDespiteAFencedHandlerIgnoringItsContext: an
// offset reset fences the runner whose handler, ignoring its context, still
// runs; the queue starts again under the new grant. Close gives up on that
// handler after its waits too, as documented, instead of waiting for it
// without end: its result is ignored, nothing is committed for it, and the
// next consumer of the group gets the message again. For each handler mode.
func TestConsumer_CloseReturnsDespiteAFencedHandlerIgnoringItsContext(t *testing.T) {
	modes := map[string]func(o *equeue.ConsumerOptions, h equeue.Handler){
		"concurrent": func(o *equeue.ConsumerOptions, h equeue.Handler) { o.Handler = h },
		"orderly":    func(o *equeue.ConsumerOptions, h equeue.Handler) { o.Handler, o.Orderly = h, true },
		"batch": func(o *equeue.ConsumerOptions, h equeue.Handler) {
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error { return h(ctx, msgs[0]) }
		},
		"orderly batch": func(o *equeue.ConsumerOptions, h equeue.Handler) {
			o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error { return h(ctx, msgs[0]) }
			o.Orderly = true
		},
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("job")}}})
			require.NoError(t, err)
			running := make(chan struct{}, 1)
			release := make(chan struct{})
			var released sync.Once
			o := equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				ShutdownTimeout: 50 * time.Millisecond, CommitInterval: time.Hour, HeartbeatInterval: 20 * time.Millisecond}
			mode(&o, func(context.Context, *equeue.Message) error {
				select {
				case running <- struct{}{}:
				default:
				}
				<-release // ignores its context
				return nil
			})
			c := startConsumer(t, e, o)
			t.Cleanup(func() { released.Do(func() { close(release) }) }) // before c's Close
			select {
			case <-running:
			case <-ctx.Done():
				t.Fatal("the handler did not start")
			}
			epoch := epochOf(c, "t")
			require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
			eventually(t, 10*time.Second, func() bool {
				now := epochOf(c, "t")
				return now != 0 && now != epoch
			}, "the consumer runs the queue under the reset's grant")

			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			select {
			case err := <-closed:
				assert.ErrorIs(t, err, equeue.ErrHandlerAbandoned, "Close reports the fenced handler it gave up on")
			case <-time.After(10 * time.Second): // both waits are 50 ms: it hangs
				released.Do(func() { close(release) })
				t.Fatalf("Close waits for a fenced handler that ignores its context (Close: %v)", <-closed)
			}
			released.Do(func() { close(release) }) // the handlers return; their late results are ignored
			assert.Equal(t, int64(0), startedCommit(t, e, "g"), "nothing is committed for the handlers given up on")

			got := make(chan string, 1)
			o = equeue.ConsumerOptions{Group: "g", ID: "b", Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: time.Hour}
			mode(&o, func(_ context.Context, m *equeue.Message) error {
				select {
				case got <- string(m.Body):
				default:
				}
				return nil
			})
			startConsumer(t, e, o)
			select {
			case body := <-got:
				assert.Equal(t, "job", body, "the next consumer gets the message again")
			case <-ctx.Done():
				t.Fatal("the message was not delivered again")
			}
		})
	}
}

// epochOf is the epoch of the grant under which c runs queue 0 of topic;
// zero when it does not run it.
func epochOf(c *equeue.Consumer, topic string) int64 {
	for _, q := range c.Queues() {
		if q.Topic == topic && q.Queue == 0 {
			return q.Epoch
		}
	}
	return 0
}
