package equeue

import (
	"slices"
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
	// cur is the runner running a completion's hooks, nil between two.
	cur *completionRunner
	// detached are the runners a hook detached (closeFromHook) whose hook
	// has not returned yet; hooksLeft counts them, for a Close from
	// outside to wait for (Producer.Close).
	detached  []*completionRunner
	hooksLeft sync.WaitGroup
}

// completionRunner is one runCompletions goroutine.
type completionRunner struct {
	gid uint64 // its goroutine's ID (goid.ID)
	// detached is set, under completions.mu, when a hook it runs called
	// Producer.Close, which ended that send's count in p.async and handed
	// the queue to another goroutine (closeFromHook): it ends once the
	// hook returns.
	detached bool
}

// completeAsync runs finish(res, err), the end of a SendAsync, and then
// ends the send's count in p.async: at once when p has no hooks, else on
// p's completion goroutine. It never blocks, so an engine's callback may
// call it.
func (p *Producer) completeAsync(finish func(SendResult, error), res SendResult, err error) {
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

// runCompletions runs the queued completions until the queue is empty.
// A hook that calls runtime.Goexit ends this goroutine: finish has
// completed that send's future by then (Producer.hookGoexited), and a new
// goroutine goes on with the rest of the queue. One that calls
// Producer.Close hands the queue to a new goroutine (closeFromHook).
func (p *Producer) runCompletions() {
	c := &p.completions
	me := &completionRunner{gid: goid.ID()}
	inFinish := false
	defer func() {
		if inFinish && !c.leave(me) { // not a panic (finish recovers every one): runtime.Goexit
			p.async.Done()
			go p.runCompletions()
		}
	}()
	for {
		c.mu.Lock()
		if c.head == len(c.queue) {
			c.queue, c.head, c.running = c.queue[:0], 0, false
			c.mu.Unlock()
			return
		}
		w := c.queue[c.head]
		c.queue[c.head] = completion{}
		c.head++
		c.cur = me
		c.mu.Unlock()
		inFinish = true
		w.finish(w.res, w.err)
		inFinish = false
		if c.leave(me) {
			return
		}
		p.async.Done()
	}
}

// leave ends me's run of a completion's hooks and reports whether a hook
// detached it (closeFromHook): it must then touch neither the queue nor
// the send's count, and its hook having returned, a Close from outside
// no longer waits for it.
func (c *completions) leave(me *completionRunner) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !me.detached {
		c.cur = nil
		return false
	}
	c.detached = slices.DeleteFunc(c.detached, func(r *completionRunner) bool { return r == me })
	c.hooksLeft.Done()
	return true
}

// closeFromHook is the part of Close called from a hook of one of p's
// SendAsync calls that runs on p's completions goroutine: the send
// whose hook runs completes only once the hook returns, and the sends
// completed after it wait behind it for that goroutine, so a Close that
// waited for them there would wait for ever. It ends that send's count
// in p.async, hands the queue to a new goroutine, and reports true; the
// hook's goroutine ends once the hook returns, and until then a Close
// from outside waits for it (hooksLeft). Called again from a hook so
// detached, it changes nothing and reports true: that Close must not
// wait for its own hook either. Called elsewhere, it changes nothing and
// reports false.
func (p *Producer) closeFromHook() bool {
	c := &p.completions
	gid := goid.ID()
	c.mu.Lock()
	if gid != 0 && slices.ContainsFunc(c.detached, func(r *completionRunner) bool { return r.gid == gid }) {
		c.mu.Unlock()
		return true
	}
	cur := c.cur
	if cur == nil || cur.gid == 0 || cur.gid != gid {
		c.mu.Unlock()
		return false
	}
	cur.detached = true
	c.detached = append(c.detached, cur)
	c.hooksLeft.Add(1) // before its count in p.async ends: a Close that waited for it waits for this
	c.cur = nil
	start := c.head < len(c.queue)
	c.running = start
	c.mu.Unlock()
	if start {
		go p.runCompletions()
	}
	p.async.Done()
	return true
}
