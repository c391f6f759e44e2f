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
	eventually(t, 60*time.Second, func() bool { return ledger.succeeded() == jobs }, "every job succeeds (%d of %d)", ledger.succeeded(), jobs)
	eventually(t, 30*time.Second, func() bool { return groupLag(t, e, "work") == 0 }, "the group has no lag")
	closeAll(cs)
	ledger.check(t, jobs)
}
