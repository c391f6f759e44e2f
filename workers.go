package equeue

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a handler worker waits for another message before
// it exits: an idle consumer keeps no workers.
const workerIdle = time.Second

// workerPool runs the handlers of a concurrent consumer on at most
// Concurrency goroutines, started on demand and ended when idle.
//
// Runners hand it whole runs of pulled messages: one lock per pull, not a
// channel operation per message. Workers take tasks in order and go on
// taking while any wait, without parking between them. Under a backlog a
// worker takes a short run of tasks at once (see take) and claims them one
// by one without the pool's lock; a worker that finds the queue empty
// takes over the unclaimed rest of another's run before it parks, so a
// slow handler still holds up only its own message. At most one worker is
// being woken (or started) at a time; the woken one wakes the next if
// tasks still wait after it took its own, queued or unclaimed in a run.
// So, while tasks wait, either a woken worker is on its way or every
// worker runs: tasks held behind stuck handlers do not wait while a
// worker is parked.
type workerPool struct {
	mu      sync.Mutex
	tasks   taskRing        // handed over and not taken yet, in order
	limit   int             // a runner waits while this many of its tasks wait
	max     int             // Concurrency
	running int             // workers started and not exited
	idle    []chan struct{} // parked workers' wake-up channels, last parked last
	waking  bool            // a worker was woken or started and has not looked for a task yet
	held    []*heldRun      // the runs of the running workers
}

// poolShare is a runner's part of the worker pool's queue; guarded by the
// pool's mu.
type poolShare struct {
	waiting int           // tasks of the runner handed over and not taken yet
	room    chan struct{} // closed when its tasks were taken while it waits; nil otherwise
}

// newWorkerPool sizes a pool for o: up to Concurrency workers, and up to a
// pull's worth of tasks of each runner waiting for them, so a runner pulls
// its next batch while the last one is handled.
func newWorkerPool(o *ConsumerOptions) *workerPool {
	return &workerPool{max: o.Concurrency, limit: max(o.PullBatch, 1)}
}

// workers returns how many worker goroutines run now.
func (p *workerPool) workers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// submit hands t to the worker pool; false when stop closes first.
func (c *Consumer) submit(t task, stop <-chan struct{}) bool {
	return c.submitTasks(t.r, stop, 1, func(int) task { return t })
}

// submitRun hands every message of msgs to the worker pool as a task of r,
// in order; false when stop closes first (the rest stay unhandled).
func (c *Consumer) submitRun(r *runner, msgs []*Message, stop <-chan struct{}) bool {
	return c.submitTasks(r, stop, len(msgs), func(i int) task { return task{r: r, m: msgs[i]} })
}

// submitTasks queues the n tasks at(0) ... at(n-1) of r, as many at a time
// as the pool's limit lets wait, and waits for room in between.
func (c *Consumer) submitTasks(r *runner, stop <-chan struct{}, n int, at func(int) task) bool {
	p := c.pool
	share := &r.share
	for i := 0; i < n; {
		p.mu.Lock()
		for ; i < n && share.waiting < p.limit; i++ {
			p.tasks.push(at(i))
			share.waiting++
		}
		if !p.waking {
			c.wakeWorkerLocked(nil)
		}
		if i == n {
			p.mu.Unlock()
			return true
		}
		if share.room == nil {
			share.room = make(chan struct{})
		}
		room := share.room
		p.mu.Unlock()
		select {
		case <-room:
		case <-stop:
			return false
		}
	}
	return true
}

// wakeWorkerLocked wakes a parked worker, or starts one when fewer than
// Concurrency run, if tasks wait (see waitingLocked; h is the caller's
// run, nil for a submitter); p.mu is held.
func (c *Consumer) wakeWorkerLocked(h *heldRun) {
	p := c.pool
	if !p.waitingLocked(h) {
		return
	}
	if n := len(p.idle); n > 0 {
		wake := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		wake <- struct{}{} // buffered for one, and only its owner receives
		p.waking = true
		return
	}
	if p.running < p.max {
		p.running++
		p.waking = true
		c.goFunc(c.worker)
	}
}

// maxTakeRun bounds how many waiting tasks a worker takes at once.
const maxTakeRun = 8

// heldRun is the run of tasks a worker took from the pool's queue. Its
// owner claims them one by one with an atomic add, without the pool's
// lock; other workers claim (steal) the unclaimed rest under the pool's
// lock, with compare-and-swap, when the queue is empty. The tasks and n
// change only under the pool's lock, while every task is claimed.
type heldRun struct {
	tasks [maxTakeRun]task
	n     int          // tasks in the run
	next  atomic.Int32 // index of the first unclaimed task (may pass n)
	in    bool         // listed in the pool's held; guarded by its mu
}

// claim returns the run's next unclaimed task; only its owner calls it.
func (h *heldRun) claim() (task, bool) {
	i := int(h.next.Add(1)) - 1
	if i >= h.n {
		return task{}, false
	}
	t := h.tasks[i]
	h.tasks[i] = task{} // hold no message once handed out
	return t, true
}

// take refills h, which its owner emptied, with the next waiting tasks and
// reports whether it holds any now; else it parks the calling worker (wake
// gets its wake-up). woken says the caller is the worker being woken: it
// wakes the next one if tasks still wait after its own.
//
// A worker takes one task, or, under a backlog, a short run: as many as
// leave each of the other Concurrency-1 workers at least as many (at most
// maxTakeRun). One lock hand-over then serves the run. With the queue
// empty it takes half of the unclaimed rest of another worker's run, so
// tasks held behind a slow handler go to a free worker.
func (c *Consumer) take(woken bool, wake chan struct{}, h *heldRun) bool {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if woken {
		p.waking = false
	}
	if !h.in {
		p.held, h.in = append(p.held, h), true
	}
	h.n = 0
	n := 1
	if p.max > 0 {
		n = min(max(p.tasks.len()/p.max, 1), maxTakeRun)
	}
	for ; h.n < n; h.n++ {
		t, ok := p.tasks.pop()
		if !ok {
			break
		}
		share := &t.r.share
		share.waiting--
		if share.room != nil && share.waiting <= p.limit/2 {
			close(share.room)
			share.room = nil
		}
		h.tasks[h.n] = t
	}
	if h.n == 0 {
		p.steal(h)
	}
	h.next.Store(0)
	if h.n == 0 {
		p.idle = append(p.idle, wake)
		return false
	}
	if woken {
		c.wakeWorkerLocked(h)
	}
	return true
}

// waitingLocked reports whether tasks wait for a free worker: queued, or
// unclaimed in a worker's run (a free worker steals them), besides the
// next task of h, which its owner claims at once; p.mu is held. Runs gain
// tasks only under p.mu, so a run seen without any stays so until p.mu is
// let go; one seen with some may have lost them to its owner meanwhile,
// which costs one wake-up for nothing.
func (p *workerPool) waitingLocked(h *heldRun) bool {
	if p.tasks.len() > 0 {
		return true
	}
	for _, o := range p.held {
		left := o.n - int(o.next.Load())
		if o == h {
			left-- // its owner's next claim
		}
		if left > 0 {
			return true
		}
	}
	return false
}

// steal moves half (rounded up) of the unclaimed tasks of the first other
// run holding any into h; p.mu is held.
func (p *workerPool) steal(h *heldRun) {
	for _, o := range p.held {
		if o == h {
			continue
		}
		for {
			i := int(o.next.Load())
			left := o.n - i
			if left <= 0 {
				break
			}
			k := (left + 1) / 2
			if !o.next.CompareAndSwap(int32(i), int32(i+k)) {
				continue // its owner claimed one meanwhile
			}
			h.n = copy(h.tasks[:], o.tasks[i:i+k])
			clear(o.tasks[i : i+k])
			return
		}
	}
}

// unlist removes h from the pool's runs; p.mu is held.
func (p *workerPool) unlist(h *heldRun) {
	if !h.in {
		return
	}
	for i, o := range p.held {
		if o == h {
			p.held = append(p.held[:i], p.held[i+1:]...)
			break
		}
	}
	h.in = false
}

// worker handles waiting tasks until none has come for workerIdle or the
// consumer stops.
func (c *Consumer) worker() {
	c.work(make(chan struct{}, 1), &heldRun{}, true) // started by wakeWorkerLocked
}

// work is the worker loop, with the worker's wake-up channel and run.
// A task that ends the goroutine by runtime.Goexit (a hook or the handler
// calling t.FailNow), which recover cannot stop, does not end the worker:
// the loop goes on from where it was on a new goroutine, the pool still
// counting it, and its run's other tasks are still handled.
func (c *Consumer) work(wake chan struct{}, h *heldRun, woken bool) {
	var idle *time.Timer // made when it first parks
	inTask := false
	defer func() {
		if idle != nil {
			idle.Stop()
		}
		if inTask { // not returned: a panic in a task is recovered, so a Goexit
			c.goFunc(func() { c.work(wake, h, false) })
		}
	}()
	for c.ctx.Err() == nil {
		if t, ok := h.claim(); ok {
			inTask = true
			t.r.handleTask(t)
			inTask = false
			continue
		}
		if c.take(woken, wake, h) {
			woken = false
			continue
		}
		woken = false
		if idle == nil {
			idle = time.NewTimer(workerIdle)
		} else {
			idle.Reset(workerIdle)
		}
		select {
		case <-wake:
			woken = true
			continue
		case <-idle.C:
		case <-c.ctx.Done():
		}
		if c.leave(wake, h) {
			return
		}
		<-wake // woken as it stopped waiting: its token is there
		woken = true
	}
	c.exitWorker(woken, h)
}

// leave counts out a parked worker that stops waiting; false when it was
// woken meanwhile (its token is in wake) and must go on.
func (c *Consumer) leave(wake chan struct{}, h *heldRun) bool {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, w := range p.idle {
		if w == wake {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.running--
			p.unlist(h)
			return true
		}
	}
	return false
}

// exitWorker counts out a worker that stops because the consumer stops;
// the tasks it still held stay unhandled, as those still queued do.
func (c *Consumer) exitWorker(woken bool, h *heldRun) {
	p := c.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	if woken {
		p.waking = false
	}
	p.unlist(h)
	h.next.Store(int32(h.n))
	clear(h.tasks[:])
}

// taskRing is a FIFO of tasks on a ring buffer that grows as needed and
// is reused, so queueing a task allocates nothing once it has grown.
type taskRing struct {
	buf  []task
	head int // index of the first task
	n    int // tasks held
}

func (q *taskRing) len() int { return q.n }

func (q *taskRing) push(t task) {
	if q.n == len(q.buf) {
		grown := make([]task, max(2*len(q.buf), 16))
		k := copy(grown, q.buf[q.head:])
		copy(grown[k:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)%len(q.buf)] = t
	q.n++
}

func (q *taskRing) pop() (task, bool) {
	if q.n == 0 {
		return task{}, false
	}
	t := q.buf[q.head]
	q.buf[q.head] = task{} // hold no message once handed out
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return t, true
}
