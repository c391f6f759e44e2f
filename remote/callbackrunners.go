package remote

import (
	"sync"

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
// recorded while it runs.
type callbackRunners struct {
	mu  sync.Mutex
	ids map[uint64]int // goroutine -> how many times recorded (nested)
}

func newCallbackRunners() *callbackRunners {
	return &callbackRunners{ids: map[uint64]int{}}
}

// enter records the current goroutine, whose number it returns for exit.
func (r *callbackRunners) enter() uint64 {
	id := goid.ID()
	r.mu.Lock()
	r.ids[id]++
	r.mu.Unlock()
	return id
}

// exit ends a record of enter.
func (r *callbackRunners) exit(id uint64) {
	r.mu.Lock()
	if r.ids[id]--; r.ids[id] <= 0 {
		delete(r.ids, id)
	}
	r.mu.Unlock()
}

// current reports whether the current goroutine is recorded.
func (r *callbackRunners) current() bool {
	return r.has(goid.ID())
}

// has reports whether goroutine id is recorded.
func (r *callbackRunners) has(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id] > 0
}

// report runs cb on the current goroutine, recorded while it runs.
func (r *callbackRunners) report(cb func(equeue.AppendResult, error), res equeue.AppendResult, err error) {
	id := r.enter()
	defer r.exit(id)
	cb(res, err)
}

// RunsCallback reports whether the current goroutine runs an AppendAsync
// callback of c, or its Close (equeue.CallbackRunner): a call from it
// that would wait for the stream's answers may wait for itself.
func (c *Client) RunsCallback() bool { return c.runners.current() }

// RunsCallback reports whether the current goroutine runs an AppendAsync
// callback of cc or of one of its nodes' clients, or its Close
// (equeue.CallbackRunner).
func (cc *ClusterClient) RunsCallback() bool { return cc.inCallback() }
