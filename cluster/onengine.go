package cluster

import (
	"runtime/debug"

	"github.com/equeue-go/equeue"
)

// onEngine tells the program's OnEngine, when set, of e (nil: the engine
// stopped). loop tells that the node's own reconcile loop calls it: no
// call of the node's waits for the loop, and a panic raised again on its
// goroutine would end the program, so it is recovered and logged (the
// node's logger, at error level), and the loop goes on. Called by Close
// (loop unset), a panic goes on to Close's caller (ErrCloseUnfinished).
func (n *Node) onEngine(e *equeue.Engine, loop bool) {
	if n.opts.OnEngine == nil {
		return
	}
	if loop {
		defer func() {
			if p := recover(); p != nil {
				n.log.Error("OnEngine panicked", "engine_stopped", e == nil, "panic", p, "stack", string(debug.Stack()))
			}
		}()
	}
	n.opts.OnEngine(e)
}
