package equeue

import "time"

// workerIdle is how long a handler worker waits for another message before
// it exits: an idle consumer keeps no workers.
const workerIdle = time.Second

// workerPool runs the handlers of a concurrent consumer on at most
// Concurrency goroutines, started on demand and ended when idle.
type workerPool struct {
	tasks chan task     // unbuffered: a send succeeds only when a worker takes it
	slots chan struct{} // one per running worker
}

func newWorkerPool(concurrency int) *workerPool {
	return &workerPool{tasks: make(chan task), slots: make(chan struct{}, concurrency)}
}

// submit hands t to an idle worker, or starts a worker when fewer than
// Concurrency run, or waits for one to be free; false when stop closes first.
func (c *Consumer) submit(t task, stop <-chan struct{}) bool {
	p := c.pool
	select {
	case p.tasks <- t:
		return true
	default:
	}
	select {
	case p.tasks <- t:
		return true
	case p.slots <- struct{}{}:
		c.goFunc(func() { c.worker(t) })
		return true
	case <-stop:
		return false
	}
}

// worker handles t, then whatever is submitted next, until it has been idle
// for workerIdle or the consumer stops.
func (c *Consumer) worker(t task) {
	p := c.pool
	defer func() { <-p.slots }()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		t.r.handleTask(t)
		idle.Reset(workerIdle)
		select {
		case t = <-p.tasks:
		case <-idle.C:
			return
		case <-c.ctx.Done():
			return
		}
	}
}
