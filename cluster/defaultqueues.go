package cluster

import "github.com/equeue-go/equeue"

// DefaultQueues is the queue count of a topic created without one: the
// engine's Options.DefaultQueues (Options.Engine), equeue.DefaultQueues
// when that is unset or 0. A topic is made by the leader's engine, so a
// cluster whose nodes set it differently makes it as the leader sets it.
func (n *Node) DefaultQueues() int {
	if n.opts.Engine != nil && n.opts.Engine.DefaultQueues > 0 {
		return n.opts.Engine.DefaultQueues
	}
	return equeue.DefaultQueues
}
