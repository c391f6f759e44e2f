package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// batchLog records every BatchHandler call: the bodies and attempts it got.
type batchLog struct {
	mu    sync.Mutex
	calls [][]string
	runs  map[string][]int // body -> attempts it was handled with
	ok    map[string]int   // body -> successful handlings
}

func newBatchLog() *batchLog { return &batchLog{runs: map[string][]int{}, ok: map[string]int{}} }

// handler returns a BatchHandler that fails the messages fail selects.
func (l *batchLog) handler(fail func(m *equeue.Message) bool) equeue.BatchHandler {
	return func(_ context.Context, msgs []*equeue.Message) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		call := make([]string, len(msgs))
		failed := map[int]error{}
		for i, m := range msgs {
			body := string(m.Body)
			call[i] = body
			l.runs[body] = append(l.runs[body], m.Attempt)
			if fail(m) {
				failed[i] = fmt.Errorf("%s failed", body)
			} else {
				l.ok[body]++
			}
		}
		l.calls = append(l.calls, call)
		if len(failed) > 0 {
			return &equeue.BatchError{Failed: failed}
		}
		return nil
	}
}

func (l *batchLog) succeeded() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ok)
}

func sendBodies(t *testing.T, b equeue.Broker, topic string, n int) {
	t.Helper()
	p := newProducer(t, b, nil)
	for i := range n {
		_, err := p.Send(ctxT(t), &equeue.Message{Topic: topic, Keys: []string{"k"}, Body: []byte(strconv.Itoa(i))})
		require.NoError(t, err)
	}
}

func TestBatch_BadOptions(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	sub := []equeue.Subscription{{Topic: "t"}}
	bh := func(context.Context, []*equeue.Message) error { return nil }
	h := func(context.Context, *equeue.Message) error { return nil }
	for name, o := range map[string]equeue.ConsumerOptions{
		"both handlers":     {Group: "g", Subscriptions: sub, Handler: h, BatchHandler: bh},
		"negative size":     {Group: "g", Subscriptions: sub, BatchHandler: bh, BatchSize: -1},
		"size over maximum": {Group: "g", Subscriptions: sub, BatchHandler: bh, BatchSize: equeue.MaxPullBatch + 1},
	} {
		_, err := equeue.NewConsumer(e, o)
		assert.ErrorIs(t, err, equeue.ErrInvalidOptions, name)
	}
	_, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", Subscriptions: sub, BatchHandler: bh})
	assert.NoError(t, err, "a BatchHandler alone is enough")
}

// TestBatch_PartialFailureRetriesOnlyFailed: a batch handler fails the odd
// messages of each batch once through a BatchError; only those go through
// the retry topic and are handled again, each once, with attempt 1.
func TestBatch_PartialFailureRetriesOnlyFailed(t *testing.T) {
	forTransports(t, testBatch_PartialFailureRetriesOnlyFailed)
}

func testBatch_PartialFailureRetriesOnlyFailed(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const n = 40
	sendBodies(t, b, "t", n) // a backlog: the batches are full
	log := newBatchLog()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: 50 * time.Millisecond,
		BatchSize: 8, RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		BatchHandler: log.handler(func(m *equeue.Message) bool {
			i, _ := strconv.Atoi(string(m.Body))
			return i%2 == 1 && m.Attempt == 0
		})})
	eventually(t, 30*time.Second, func() bool { return log.succeeded() == n }, "every message succeeds")
	eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
	log.mu.Lock()
	defer log.mu.Unlock()
	full := 0
	for _, c := range log.calls {
		assert.LessOrEqual(t, len(c), 8, "BatchSize bounds a call")
		if len(c) == 8 {
			full++
		}
	}
	assert.GreaterOrEqual(t, full, n/8, "the backlog is handled in full batches: %v", log.calls)
	for i := range n {
		body := strconv.Itoa(i)
		want := []int{0}
		if i%2 == 1 {
			want = []int{0, 1}
		}
		assert.Equal(t, want, log.runs[body], "message %s: attempts it was handled with", body)
		assert.Equal(t, 1, log.ok[body], "message %s succeeded once", body)
	}
	info, err := e.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Equal(t, int64(n/2), info.Queues[0].MaxOffset, "only the failed messages went through the retry topic")
}

// TestBatch_NilBatchErrorFailsNothing: a BatchHandler that gathers its
// failures in a *BatchError made only when one fails, and returns that
// pointer, returns a nil *BatchError in a non-nil error when none failed
// (the usual Go slip). It lists no failed message, so the whole batch is
// handled; it used to panic the worker, crashing the process.
func TestBatch_NilBatchErrorFailsNothing(t *testing.T) {
	assert.NotPanics(t, func() { _ = (*equeue.BatchError)(nil).Error() }, "a nil *BatchError has an error text")
	for _, orderly := range []bool{false, true} {
		t.Run(fmt.Sprintf("orderly=%v", orderly), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			const n = 20
			sendBodies(t, e, "t", n)
			var mu sync.Mutex
			runs := map[string]int{}
			startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				CommitInterval: 20 * time.Millisecond, Orderly: orderly, BatchSize: 8,
				BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
					var failed *equeue.BatchError // made at the first failure: none here
					mu.Lock()
					defer mu.Unlock()
					for _, m := range msgs {
						runs[string(m.Body)]++
					}
					return failed
				}})
			eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
			mu.Lock()
			defer mu.Unlock()
			for i := range n {
				assert.Equal(t, 1, runs[strconv.Itoa(i)], "message %d handled once", i)
			}
			if info, err := e.Topic(ctx, equeue.RetryTopic("g")); err == nil {
				for _, q := range info.Queues {
					assert.Zero(t, q.MaxOffset, "nothing was retried")
				}
			}
		})
	}
}

// TestBatch_MaxAttemptsThenDeadLetter: a message that always fails is
// handled MaxAttempts times and then dead-lettered; a whole-batch error
// retries every message of the batch once.
func TestBatch_MaxAttemptsThenDeadLetter(t *testing.T) {
	forTransports(t, testBatch_MaxAttemptsThenDeadLetter)
}

func testBatch_MaxAttemptsThenDeadLetter(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const n = 6
	sendBodies(t, b, "t", n)
	log := newBatchLog()
	var mu sync.Mutex
	wholeFailed := false
	bad := log.handler(func(m *equeue.Message) bool { return string(m.Body) == "3" })
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: 50 * time.Millisecond,
		Concurrency: 1, BatchSize: 4, MaxAttempts: 3, RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		BatchHandler: func(ctx context.Context, msgs []*equeue.Message) error {
			mu.Lock()
			first := !wholeFailed
			wholeFailed = true
			mu.Unlock()
			if first { // the first batch fails as a whole
				log.mu.Lock()
				for _, m := range msgs {
					log.runs[string(m.Body)] = append(log.runs[string(m.Body)], m.Attempt)
				}
				log.mu.Unlock()
				return errors.New("whole batch failed")
			}
			return bad(ctx, msgs)
		}})
	eventually(t, 30*time.Second, func() bool {
		dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		return err == nil && len(dl) == 1 && log.succeeded() == n-1
	}, "one dead letter, the rest handled")
	dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Equal(t, "3", string(dl[0].Message.Body))
	assert.Equal(t, 3, dl[0].Attempts, "MaxAttempts handlings")
	assert.Contains(t, dl[0].LastError, "3 failed")
	eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, []int{0, 1, 2}, log.runs["3"], "the failing message: MaxAttempts runs")
	for _, body := range []string{"0", "1", "2"} { // the first batch
		assert.Equal(t, []int{0, 1}, log.runs[body], "message %s: failed with its batch, then handled", body)
	}
	for _, body := range []string{"4", "5"} {
		assert.Equal(t, []int{0}, log.runs[body], "message %s: handled once", body)
	}
}

// TestBatch_OrderlyKeepsOrder: in orderly mode a failure inside a batch
// retries in place from the failed message, so the queue's order holds.
func TestBatch_OrderlyKeepsOrder(t *testing.T) { forTransports(t, testBatch_OrderlyKeepsOrder) }

func testBatch_OrderlyKeepsOrder(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const n = 20
	sendBodies(t, b, "t", n)
	log := newBatchLog()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: 50 * time.Millisecond,
		Orderly: true, BatchSize: 5, LocalRetryDelay: 10 * time.Millisecond,
		BatchHandler: log.handler(func(m *equeue.Message) bool { return string(m.Body) == "7" && m.Attempt == 0 })})
	eventually(t, 30*time.Second, func() bool { return log.succeeded() == n }, "every message succeeds")
	eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
	log.mu.Lock()
	defer log.mu.Unlock()
	var seq []string
	for _, c := range log.calls {
		seq = append(seq, c...)
	}
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
		if i == 9 { // 7 failed in the batch 5..9: 7, 8, 9 again
			want = append(want, "7", "8", "9")
		}
	}
	assert.Equal(t, want, seq, "handled in offset order, again from the failed message")
	assert.Equal(t, []int{0, 1}, log.runs["7"], "the failed message counted one attempt")
	assert.Equal(t, []int{0, 0}, log.runs["8"], "a message after it is handled again, without an attempt")
}

// TestBatch_CloseMidBatchNoDuplicates: three batch workers closed while
// their batches run, then restarted: every job succeeds exactly once, and
// the only other runs are counted retries. (TestBatch_CloseCancelsRunningBatch
// covers a batch that outlives ShutdownTimeout.)
func TestBatch_CloseMidBatchNoDuplicates(t *testing.T) {
	forTransports(t, testBatch_CloseMidBatchNoDuplicates)
}

func testBatch_CloseMidBatchNoDuplicates(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 4))
	const jobs = 300
	ledger := newJobLedger()
	handler := func(ctx context.Context, msgs []*equeue.Message) error {
		failed := map[int]error{}
		for i, m := range msgs {
			job := string(m.Body)
			select {
			case <-time.After(2 * time.Millisecond): // the work
			case <-ctx.Done():
				for j := i; j < len(msgs); j++ {
					ledger.record(string(msgs[j].Body), msgs[j].Attempt, false)
					failed[j] = ctx.Err()
				}
				return &equeue.BatchError{Failed: failed}
			}
			var n int
			_, _ = fmt.Sscanf(job, "job-%d", &n)
			if n%2 == 1 && m.Attempt == 0 {
				ledger.record(job, m.Attempt, false)
				failed[i] = errors.New("transient failure")
				continue
			}
			ledger.record(job, m.Attempt, true)
		}
		if len(failed) > 0 {
			return &equeue.BatchError{Failed: failed}
		}
		return nil
	}
	start := func() []*equeue.Consumer {
		var cs []*equeue.Consumer
		for _, id := range []string{"w1", "w2", "w3"} {
			cs = append(cs, startConsumer(t, b, equeue.ConsumerOptions{Group: "work", ID: id,
				Subscriptions: []equeue.Subscription{{Topic: "jobs"}}, Concurrency: 4, CommitInterval: 50 * time.Millisecond, BatchSize: 8,
				RetryTopicDelays: []time.Duration{20 * time.Millisecond}, BatchHandler: handler}))
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
	closeAll(cs) // mid-batch
	cs = start()
	eventually(t, 60*time.Second, func() bool { return ledger.succeeded() == jobs }, "every job succeeds (%d of %d)", func() any { return ledger.succeeded() }, jobs)
	eventually(t, 30*time.Second, func() bool { return groupLag(t, e, "work") == 0 }, "the group has no lag")
	closeAll(cs)
	ledger.check(t, jobs)
}

// TestBatch_CloseCancelsRunningBatch: Close cancels a batch still running
// after ShutdownTimeout; the handler finished half of it and fails the
// rest with the context's error. The finished half is committed and never
// delivered again; the rest counted an attempt and comes back once, from
// the retry topic.
func TestBatch_CloseCancelsRunningBatch(t *testing.T) {
	forTransports(t, testBatch_CloseCancelsRunningBatch)
}

func testBatch_CloseCancelsRunningBatch(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sendBodies(t, b, "t", 8)
	started := make(chan struct{})
	opts := equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		BatchSize: 8, ShutdownTimeout: 300 * time.Millisecond, RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		BatchHandler: func(ctx context.Context, msgs []*equeue.Message) error {
			if len(msgs) != 8 {
				return fmt.Errorf("got a batch of %d", len(msgs))
			}
			close(started) // the first half is done; the rest waits for Close
			<-ctx.Done()
			failed := map[int]error{}
			for i := 4; i < 8; i++ {
				failed[i] = ctx.Err()
			}
			return &equeue.BatchError{Failed: failed}
		}}
	c := startConsumer(t, b, opts)
	<-started
	require.NoError(t, c.Close())
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" {
			assert.Equal(t, int64(8), q.Committed, "the whole batch is finished: handled or sent back")
		}
	}

	log := newBatchLog()
	opts.BatchHandler = log.handler(func(*equeue.Message) bool { return false })
	opts.CommitInterval = 50 * time.Millisecond
	startConsumer(t, b, opts)
	eventually(t, 30*time.Second, func() bool { return log.succeeded() == 4 }, "the cancelled half comes back")
	eventually(t, 10*time.Second, func() bool { return groupLag(t, e, "g") == 0 }, "the group has no lag")
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, map[string][]int{"4": {1}, "5": {1}, "6": {1}, "7": {1}}, log.runs,
		"only the cancelled messages, once each, with their counted attempt")
}

// TestBatch_OrderlyMaxAttemptsHoldsBehindTheFirstFailure: in orderly mode
// a message behind the batch's first failure counts its own failed runs;
// once they reach MaxAttempts it is dead-lettered when its turn comes, not
// handled once more.
func TestBatch_OrderlyMaxAttemptsHoldsBehindTheFirstFailure(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sendBodies(t, e, "t", 2)
	log := newBatchLog()
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Orderly: true, BatchSize: 2, MaxAttempts: 2, LocalRetryDelay: 10 * time.Millisecond,
		BatchHandler: log.handler(func(*equeue.Message) bool { return true })})
	var dl []equeue.DLQEntry
	eventually(t, 10*time.Second, func() bool {
		var err error
		dl, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		return err == nil && len(dl) == 2
	}, "both messages dead-lettered")
	for i, body := range []string{"0", "1"} {
		assert.Equal(t, body, string(dl[i].Message.Body))
		assert.Equal(t, 2, dl[i].Attempts, "message %s: MaxAttempts handlings", body)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, []int{0, 1}, log.runs["0"], "the first message: MaxAttempts runs")
	assert.Equal(t, []int{0, 1}, log.runs["1"], "the message behind it: MaxAttempts runs, not one more")
}

// TestBatch_OrderlyRetryAfterChoosesTheWait: in orderly mode a batch whose
// first failed message asks for RetryAfter is handled again after that
// wait, not LocalRetryDelay, as a single orderly handler's message is.
func TestBatch_OrderlyRetryAfterChoosesTheWait(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	sendBodies(t, e, "t", 2)
	var mu sync.Mutex
	var calls [][]string
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Orderly: true, BatchSize: 2, LocalRetryDelay: time.Hour,
		BatchHandler: func(_ context.Context, msgs []*equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			var call []string
			for _, m := range msgs {
				call = append(call, string(m.Body))
			}
			calls = append(calls, call)
			if len(calls) == 1 {
				return &equeue.BatchError{Failed: map[int]error{1: equeue.RetryAfter(20*time.Millisecond, errors.New("not yet"))}}
			}
			return nil
		}})
	eventually(t, 5*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == 2
	}, "handled again after the handler's wait, not LocalRetryDelay")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, [][]string{{"0", "1"}, {"1"}}, calls, "the failed message again, alone")
}
