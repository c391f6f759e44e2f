package equeue

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkerPool_StartsOnDemandAndExitsWhenIdle: a consumer starts no
// handler worker until messages arrive, never runs more than Concurrency,
// and its workers exit once idle.
func TestWorkerPool_StartsOnDemandAndExitsWhenIdle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	release := make(chan struct{})
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Concurrency: 4,
		Handler: func(ctx context.Context, _ *Message) error {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	workers := c.pool.workers
	assert.Zero(t, workers(), "no worker before the first message")

	msgs := make([]*Message, 10)
	for i := range msgs {
		msgs[i] = &Message{Body: []byte{byte(i)}}
	}
	for q := range 2 {
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	waitFor(t, func() bool { return workers() == 4 }, "all 4 workers busy")
	for range 20 {
		assert.LessOrEqual(t, workers(), 4, "never more than Concurrency")
		time.Sleep(time.Millisecond)
	}
	close(release)
	waitFor(t, func() bool { return c.handled.Load() == 20 }, "every message handled")
	waitFor(t, func() bool { return workers() == 0 }, "idle workers exit")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPark_IdleRunnersHoldNoGoroutine: in-process, a runner at the end of
// its queue parks (its pull loop returns) and runs again at the next
// append; a parked runner still stops on Close.
func TestPark_IdleRunnersHoldNoGoroutine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	got := make(chan string, 8)
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *Message) error { got <- string(m.Body); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	// Two queues of t and the group's retry queue.
	waitFor(t, func() bool { return c.parkedCount() == 3 }, "every idle runner parks")
	for i, body := range []string{"one", "two"} {
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: i % 2, Messages: []*Message{{Body: []byte(body)}}})
		require.NoError(t, err)
		select {
		case b := <-got:
			assert.Equal(t, body, b)
		case <-ctx.Done():
			t.Fatal("a parked runner did not wake at the append")
		}
		waitFor(t, func() bool { return c.parkedCount() == 3 }, "the runner parks again")
	}
	require.NoError(t, c.Close())
	assert.Empty(t, got, "nothing handled twice")
	assert.Zero(t, c.parkedCount())
	assert.Zero(t, parkedOn(t, e, "t", 0)+parkedOn(t, e, "t", 1)+parkedOn(t, e, RetryTopic("g"), 0),
		"a closed consumer leaves nothing parked on the engine's queues")
}

// TestPark_HandoverLeavesNoSlots: runners that park and are handed over (a
// second member joins) or stop leave no callback behind on the queues, so
// repeated rebalances of idle queues do not grow the engine's memory.
func TestPark_HandoverLeavesNoSlots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	h := func(context.Context, *Message) error { return nil }
	a, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Handler: h})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	waitFor(t, func() bool { return a.parkedCount() == 5 }, "a parks on every queue")
	for range 5 {
		b, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "b", Subscriptions: []Subscription{{Topic: "t"}}, Handler: h})
		require.NoError(t, err)
		require.NoError(t, b.Start(ctx))
		waitFor(t, func() bool { return a.parkedCount()+b.parkedCount() == 5 }, "the queues are shared and parked")
		require.NoError(t, b.Close())
		waitFor(t, func() bool { return a.parkedCount() == 5 }, "a owns every queue again")
	}
	// A runner woken by the engine (its slot taken off the queue) counts
	// as parked on the consumer's side until its wake-up runs, and parks
	// again after one pull: wait for the engine's side to settle. A slot
	// left behind would keep the total above five for good.
	total := func() int {
		n := parkedOn(t, e, RetryTopic("g"), 0)
		for q := range 4 {
			n += parkedOn(t, e, "t", q)
		}
		return n
	}
	waitFor(t, func() bool { return total() == 5 && a.parkedCount() == 5 }, "exactly a's five runners are parked on the queues")
	assert.Equal(t, 5, total(), "exactly a's five runners are parked on the queues")
	require.NoError(t, a.Close())
}

// parkedOn counts the parked runners on one queue.
func parkedOn(t *testing.T, e *Engine, topic string, queue int) int {
	t.Helper()
	q, err := e.queueOf(QueueRef{Topic: topic, Queue: queue})
	require.NoError(t, err)
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.parked)
}

// TestWorkerPool_SlowMessageDoesNotBlockOthers: a run of one pull is
// handed over at once, and a handler stuck on one of its messages holds up
// only that message: another worker takes the rest.
func TestWorkerPool_SlowMessageDoesNotBlockOthers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	release := make(chan struct{})
	var stuck atomic.Bool
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Concurrency: 2,
		Handler: func(ctx context.Context, _ *Message) error {
			if stuck.CompareAndSwap(false, true) {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return nil
		}})
	require.NoError(t, err)
	msgs := make([]*Message, 20)
	for i := range msgs {
		msgs[i] = &Message{Body: []byte{byte(i)}}
	}
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	waitFor(t, func() bool { return c.handled.Load() == 19 }, "every message but the stuck one handled while it is stuck")
	close(release)
	waitFor(t, func() bool { return c.handled.Load() == 20 }, "the stuck one too once released")
}

// TestWorkerPool_RunsUpToConcurrencyHandlers: with a backlog in several
// queues, exactly Concurrency handlers run at once, never more.
func TestWorkerPool_RunsUpToConcurrencyHandlers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	const concurrency, perQueue = 3, 50
	var active, most atomic.Int32
	full := make(chan struct{})
	var fullOnce sync.Once
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}},
		Concurrency: concurrency, PullBatch: 8,
		Handler: func(ctx context.Context, _ *Message) error {
			n := active.Add(1)
			defer active.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if n == concurrency {
				fullOnce.Do(func() { close(full) })
			}
			select { // the first handlers wait until all of them run
			case <-full:
			case <-ctx.Done():
			}
			return nil
		}})
	require.NoError(t, err)
	for q := range 4 {
		msgs := make([]*Message, perQueue)
		for i := range msgs {
			msgs[i] = &Message{Body: []byte{byte(i)}}
		}
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	waitFor(t, func() bool { return c.handled.Load() == 4*perQueue }, "every message handled")
	assert.Equal(t, int32(concurrency), most.Load(), "Concurrency handlers at once, never more")
	waitFor(t, func() bool { return c.pool.workers() == 0 }, "idle workers exit")
}

// TestWorkerPool_SubmitWaitsForRoom: each runner may have up to the
// pool's limit of tasks waiting; a longer run is handed over as its tasks
// are taken, in order, while another runner's tasks are not held up; a
// submitter waiting for room gives up when its stop closes.
func TestWorkerPool_SubmitWaitsForRoom(t *testing.T) {
	c := &Consumer{ctx: context.Background(), pool: &workerPool{max: 0, limit: 4}} // no workers: the test takes
	a, b := &runner{}, &runner{}
	msgs := make([]*Message, 10)
	for i := range msgs {
		msgs[i] = &Message{Offset: int64(i)}
	}
	stop := make(chan struct{})
	done := make(chan bool)
	go func() { done <- c.submitRun(a, msgs, stop) }()
	waiting := func(r *runner) int {
		c.pool.mu.Lock()
		defer c.pool.mu.Unlock()
		return r.share.waiting
	}
	waitFor(t, func() bool { return waiting(a) == 4 }, "the limit is queued")
	require.True(t, c.submitRun(b, msgs[:4], nil), "another runner has its own room")
	var got []int64
	take := func(want *runner) {
		var h heldRun
		require.True(t, c.take(false, nil, &h))
		tk, ok := h.claim()
		require.True(t, ok)
		_, more := h.claim()
		require.False(t, more, "no workers to share with: one at a time")
		if tk.r == want {
			got = append(got, tk.m.Offset)
		}
	}
	take(a)
	assert.Equal(t, 3, waiting(a), "nothing more until half the limit is free")
	take(a) // half free: room
	waitFor(t, func() bool { return waiting(a) == 4 }, "the submitter fills up again")
	close(stop)
	assert.False(t, <-done, "stopped before the whole run was queued")
	for c.pool.tasks.len() > 0 {
		take(a)
	}
	assert.Equal(t, []int64{0, 1, 2, 3, 4, 5}, got, "in order, and only what was queued")
	assert.Zero(t, waiting(a))
	assert.Zero(t, waiting(b))
}

// TestTaskRing_FIFOAcrossGrowth: the ring keeps order while it wraps and
// grows, and once grown queues without allocating.
func TestTaskRing_FIFOAcrossGrowth(t *testing.T) {
	var q taskRing
	msgs := make([]*Message, 100)
	for i := range msgs {
		msgs[i] = &Message{Offset: int64(i)}
	}
	next, want := 0, int64(0)
	for round := range 20 {
		for range round%7 + 3 {
			q.push(task{m: msgs[next%len(msgs)]})
			next++
		}
		for range round%5 + 1 {
			tk, ok := q.pop()
			if !ok {
				break
			}
			assert.Equal(t, want%int64(len(msgs)), tk.m.Offset)
			want++
		}
	}
	for {
		tk, ok := q.pop()
		if !ok {
			break
		}
		assert.Equal(t, want%int64(len(msgs)), tk.m.Offset)
		want++
	}
	assert.Equal(t, int64(next), want, "every task out once")
	allocs := testing.AllocsPerRun(100, func() {
		for _, m := range msgs[:32] {
			q.push(task{m: m})
		}
		for range 32 {
			q.pop()
		}
	})
	assert.Zero(t, allocs)
}

// TestWorkerPool_HandOverAllocatesNothingPerMessage: once its buffers have
// grown, handing a pull's messages to the pool and handling them (process
// queue bookkeeping, handler call, completion) allocates nothing per
// message.
func TestWorkerPool_HandOverAllocatesNothingPerMessage(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, PullBatch: 256,
		Handler: func(context.Context, *Message) error { return nil }})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	r := c.newRunner(Grant{QueueRef: QueueRef{Topic: "t", Queue: 0}}, OffsetCommit{})
	const n = 256
	msgs := make([]*Message, n)
	for i := range msgs {
		msgs[i] = &Message{}
	}
	next := int64(0)
	run := func() {
		for i, m := range msgs { // handled and dropped by the last run
			m.Offset = next + int64(i)
		}
		r.pq.add(msgs, next+n)
		next += n
		require.True(t, c.submitRun(r, msgs, nil))
		for { // until every message is done (and its worker let go of it)
			if left, _, _, _ := r.pq.stats(); left == 0 {
				break
			}
			runtime.Gosched()
		}
	}
	run() // grow the buffers, start the workers
	allocs := testing.AllocsPerRun(20, run)
	// What may remain is per run (a worker started, the process queue's
	// entries growing), not per handled message.
	assert.Less(t, allocs, 8.0, "allocations per run of %d messages", n)
}

// TestWorkerPool_TakesRunsUnderABacklog: a worker takes one task, or under
// a backlog as many as leave each other worker as many (at most
// maxTakeRun); with the queue empty it takes half of what another worker
// holds unclaimed, and the tasks are each handed out once, in order.
func TestWorkerPool_TakesRunsUnderABacklog(t *testing.T) {
	c := &Consumer{ctx: context.Background(), pool: &workerPool{max: 4, limit: 1000, running: 4}}
	r := &runner{}
	msgs := make([]*Message, 45)
	for i := range msgs {
		msgs[i] = &Message{Offset: int64(i)}
	}
	require.True(t, c.submitRun(r, msgs, nil))
	wake := make(chan struct{}, 1)
	var got []int64
	drain := func(h *heldRun, k int) int {
		n := 0
		for ; n < k; n++ {
			tk, ok := h.claim()
			if !ok {
				break
			}
			got = append(got, tk.m.Offset)
		}
		return n
	}
	var a, b heldRun
	require.True(t, c.take(false, wake, &a))
	assert.Equal(t, 8, drain(&a, 100), "45 waiting for 4 workers: a run of 8")
	require.True(t, c.take(false, wake, &a))
	assert.Equal(t, 8, drain(&a, 100), "37 waiting: still 8")
	require.True(t, c.take(false, wake, &a))
	assert.Equal(t, 7, drain(&a, 100), "29 waiting: 7")
	for c.pool.tasks.len() >= 4 {
		require.True(t, c.take(false, wake, &a))
		drain(&a, 100)
	}
	require.True(t, c.take(false, wake, &a))
	assert.Equal(t, 1, drain(&a, 100), "fewer waiting than workers: one at a time")
	for c.pool.tasks.len() > 0 {
		require.True(t, c.take(false, wake, &a))
		drain(&a, 100)
	}
	assert.Len(t, got, 45)

	// a holds a run of 8 and claims one; b, finding the queue empty, takes
	// half of the 7 left, then half of what is left.
	require.True(t, c.submitRun(r, msgs[:32], nil))
	require.True(t, c.take(false, wake, &a))
	require.Equal(t, 1, drain(&a, 1))
	for c.pool.tasks.len() > 0 { // others empty the queue
		var o heldRun
		require.True(t, c.take(false, wake, &o))
		drain(&o, 100)
	}
	require.True(t, c.take(false, wake, &b))
	assert.Equal(t, 4, drain(&b, 100), "half of a's 7, rounded up")
	require.True(t, c.take(false, wake, &b))
	assert.Equal(t, 2, drain(&b, 100))
	assert.Equal(t, 1, drain(&a, 100), "a keeps the one left")
	assert.False(t, c.take(false, wake, &b), "nothing left anywhere: b parks")
	assert.Len(t, got, 45+32)
	seen := map[int64]int{}
	for _, off := range got[45:] {
		seen[off]++
	}
	for off := range int64(32) {
		assert.Equal(t, 1, seen[off], "offset %d handed out once", off)
	}
}

// TestWorkerPool_IdleWorkerWokenForHeldTasks: tasks held unclaimed in the
// run of a worker whose handler is stuck wait for a free worker even when
// the queue is empty: the woken worker that empties it wakes the next one
// while any task of a run waits, so a parked worker does not stay parked
// while tasks wait behind stuck handlers.
func TestWorkerPool_IdleWorkerWokenForHeldTasks(t *testing.T) {
	c := &Consumer{ctx: context.Background(), pool: &workerPool{max: 4, limit: 1000, running: 4}}
	r := &runner{}
	msgs := make([]*Message, 16)
	for i := range msgs {
		msgs[i] = &Message{Offset: int64(i)}
	}
	wakeB, wakeC, wakeX, wakeI := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	var b, cRun, x, i heldRun
	// I and X park on an empty pool (X last, so it is woken first).
	require.False(t, c.take(false, wakeI, &i))
	require.False(t, c.take(false, wakeX, &x))
	require.True(t, c.submitRun(r, msgs, nil))
	require.Len(t, wakeX, 1, "the submit wakes X")
	seen := map[int64]int{}
	claim := func(h *heldRun) bool {
		tk, ok := h.claim()
		if ok {
			seen[tk.m.Offset]++
		}
		return ok
	}
	// Before X gets the lock: C takes a run of 4 and its handler sticks on
	// the first; B, running, empties the queue, then steals 2 of C's 3 and
	// sticks on the first of them.
	require.True(t, c.take(false, wakeC, &cRun))
	require.True(t, claim(&cRun))
	for {
		require.True(t, c.take(false, wakeB, &b))
		if c.pool.tasks.len() == 0 && b.n == 2 && b.tasks[0].m.Offset < 4 {
			break // stolen from C
		}
		for claim(&b) {
		}
	}
	require.True(t, claim(&b))
	// X, woken, finds the queue empty, steals C's last one and sticks.
	<-wakeX
	require.True(t, c.take(true, wakeX, &x))
	require.True(t, claim(&x))
	// One task is still held, unclaimed, in B's run: I must be woken.
	require.Len(t, wakeI, 1, "a parked worker is woken while a task waits in a stuck worker's run")
	<-wakeI
	require.True(t, c.take(true, wakeI, &i))
	require.True(t, claim(&i), "I steals it")
	assert.False(t, claim(&b) || claim(&cRun) || claim(&x) || claim(&i))
	assert.Len(t, seen, 16, "every task handed out")
	for off, n := range seen {
		assert.Equal(t, 1, n, "offset %d handed out once", off)
	}
}
