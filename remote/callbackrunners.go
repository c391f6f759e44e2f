package remote

import (
	"sync"
	"sync/atomic"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/goid"
)

// callbackRunners records the goroutines that run a client's AppendAsync
// callbacks, or its Close: a call the callback makes on that goroutine
// must not wait for what it runs in. Close from a callback does not wait
// for the callbacks in progress (it would wait for itself), and an
// AppendAsync from a callback does not wait for a window slot (the
// goroutine may be the one that reads the answers freeing the window).
//
// The goroutines the client starts (a stream's reader, the sender, a
// unary append's) are recorded for their whole life, once each; a
// callback on the caller's goroutine (an append refused at once) is
// recorded while it runs. Besides, running counts the callbacks in
// progress, each while it runs (call): while none runs, which is the
// common case, current answers without reading the goroutine's number,
// which costs a stack trace. Every callback must therefore run through
// call (or report), on a recorded goroutine.
//
// The runners of a ClusterClient's node client have the ClusterClient's
// as parent: what they record and count, the parent does too, so that the
// ClusterClient asks one set and not one per node.
type callbackRunners struct {
	parent  *callbackRunners
	running atomic.Int64 // callbacks in progress, nested ones included

	mu  sync.Mutex
	ids map[uint64]int // goroutine -> how many times recorded (nested)
}

func newCallbackRunners(parent *callbackRunners) *callbackRunners {
	return &callbackRunners{parent: parent, ids: map[uint64]int{}}
}

// enter records the current goroutine, whose number it returns for exit.
func (r *callbackRunners) enter() uint64 {
	id := goid.ID()
	for x := r; x != nil; x = x.parent {
		x.mu.Lock()
		x.ids[id]++
		x.mu.Unlock()
	}
	return id
}

// exit ends a record of enter.
func (r *callbackRunners) exit(id uint64) {
	for x := r; x != nil; x = x.parent {
		x.mu.Lock()
		if x.ids[id]--; x.ids[id] <= 0 {
			delete(x.ids, id)
		}
		x.mu.Unlock()
	}
}

// begin counts a callback (or a close) in progress on the current
// goroutine, which is recorded (enter), until end.
func (r *callbackRunners) begin() {
	for x := r; x != nil; x = x.parent {
		x.running.Add(1)
	}
}

// end ends a count of begin.
func (r *callbackRunners) end() {
	for x := r; x != nil; x = x.parent {
		x.running.Add(-1)
	}
}

// call runs cb, counted as a callback in progress; the current goroutine
// is recorded (enter).
func (r *callbackRunners) call(cb func(equeue.AppendResult, error), res equeue.AppendResult, err error) {
	r.begin()
	defer r.end()
	cb(res, err)
}

// current reports whether the current goroutine runs a callback (or a
// close) recorded here. While no callback runs, it reads no goroutine
// number.
func (r *callbackRunners) current() bool {
	if r.running.Load() == 0 {
		return false
	}
	return r.has(goid.ID())
}

// has reports whether goroutine id is recorded.
func (r *callbackRunners) has(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id] > 0
}

// report runs cb on the current goroutine, recorded and counted while it
// runs.
func (r *callbackRunners) report(cb func(equeue.AppendResult, error), res equeue.AppendResult, err error) {
	id := r.enter()
	defer r.exit(id)
	r.call(cb, res, err)
}

// RunsCallback reports whether the current goroutine runs an AppendAsync
// callback of c, or its Close (equeue.CallbackRunner): a call from it
// that would wait for the stream's answers may wait for itself.
func (c *Client) RunsCallback() bool { return c.runners.current() }

// RunsCallback reports whether the current goroutine runs an AppendAsync
// callback of cc or of one of its nodes' clients, or its Close
// (equeue.CallbackRunner).
func (cc *ClusterClient) RunsCallback() bool { return cc.inCallback() }
