package equeue

// DefaultQueues is the queue count of a topic created without one
// (Options.DefaultQueues, DefaultQueues when that is 0).
func (e *Engine) DefaultQueues() int { return e.opts.DefaultQueues }

// DefaultQueues is the queue count of a topic the namespace creates
// without one: its engine's.
func (n *Namespace) DefaultQueues() int { return n.e.DefaultQueues() }
