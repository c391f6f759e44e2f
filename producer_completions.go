package equeue

import (
	"sync"

	"github.com/equeue-go/equeue/internal/goid"
)

// A SendAsync completes on whatever goroutine answers its append: in
// process, one of the engine's (the one completing its writes, or the one
// answering the sends of a topic over a drop-oldest limit); behind a
// remote broker, the client's stream reader. A hook may end the goroutine
// it runs on (runtime.Goexit, as t.FailNow does), which recover cannot
// stop, and a hook that blocks holds that goroutine up. So a producer that
// has hooks runs a SendAsync's AfterSend and trace end on a goroutine of
// its own, one at a time in the order the sends completed; one without
// hooks completes its futures where the sends complete, with no hand-off.

// completion is a completed SendAsync waiting for its hooks to run:
// finish runs them and completes the future with res and err.
type completion struct {
	finish func(SendResult, error)
	res    SendResult
	err    error
}

// completions queues a producer's completed SendAsync calls for the
// goroutine that runs their hooks (runCompletions), started when the first
// one comes and gone once the queue is empty.
type completions struct {
	mu      sync.Mutex
	queue   []completion
	head    int  // queue[head:] are waiting
	running bool // a runCompletions goroutine serves the queue
	// cur is the ID of the goroutine running a completion's hooks, 0
	// between two: a Close called there is a hook's (closeFromInside).
	cur uint64
}

// completeAsync is finishAsync for a send whose count in p.pending has
// not ended.
func (p *Producer) completeAsync(finish func(SendResult, error), res SendResult, err error) {
	p.finishAsync(finish, res, err, false)
}

// finishAsync runs finish(res, err), the end of a SendAsync, once the
// broker answered it: it ends the send's count in p.pending, unless
// detached (a Close from its selector ended it: closeFromPicker), and
// then its count in p.async: at once when p has no hooks, else on p's
// completion goroutine. It never blocks, so an engine's callback may call
// it.
func (p *Producer) finishAsync(finish func(SendResult, error), res SendResult, err error, detached bool) {
	if !detached {
		p.pending.Done()
	}
	if len(p.hooks) == 0 { // no user code to run: complete here
		defer p.async.Done()
		finish(res, err)
		return
	}
	c := &p.completions
	c.mu.Lock()
	c.queue = append(c.queue, completion{finish: finish, res: res, err: err})
	start := !c.running
	c.running = true
	c.mu.Unlock()
	if start {
		go p.runCompletions()
	}
}

// runCompletions runs the queued completions until the queue is empty,
// one after another, also when a hook calls Producer.Close (which then
// does not wait for them: closeFromInside). A hook that calls
// runtime.Goexit ends this goroutine: finish has completed that send's
// future by then (Producer.hookGoexited), and a new goroutine goes on
// with the rest of the queue.
func (p *Producer) runCompletions() {
	c := &p.completions
	gid := goid.ID()
	inFinish := false
	defer func() {
		if inFinish { // not a panic (finish recovers every one): runtime.Goexit
			c.mu.Lock()
			c.cur = 0
			c.mu.Unlock()
			p.async.Done()
			go p.runCompletions()
		}
	}()
	for {
		c.mu.Lock()
		c.cur = 0
		if c.head == len(c.queue) {
			c.queue, c.head, c.running = c.queue[:0], 0, false
			c.mu.Unlock()
			return
		}
		w := c.queue[c.head]
		c.queue[c.head] = completion{}
		c.head++
		c.cur = gid
		c.mu.Unlock()
		inFinish = true
		w.finish(w.res, w.err)
		inFinish = false
		p.async.Done()
	}
}

// runs reports whether goroutine gid runs a completion's hooks.
func (c *completions) runs(gid uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur != 0 && c.cur == gid
}
