package cluster

// engineVersionBits are the low bits of Node.TopicsVersion, which carry
// the engine's own version; the bits above count the engines the node
// started and stopped.
const engineVersionBits = 40

// TopicsVersion changes each time a topic is created or deleted at this
// node's engine (equeue.Engine.TopicsVersion) and each time the node
// starts or stops an engine (a tenure begins or ends: the next engine
// holds the topics as the store has them then, which other leaders may
// have changed): while it stays the same, the node serves the same
// topics. A Kafka listener on the node keeps its index of topic IDs by it
// (package kafka). An engine's own version would have to pass 2^40
// changes in one tenure to wrap.
func (n *Node) TopicsVersion() uint64 {
	n.mu.RLock()
	e, engines := n.engine, n.engines
	n.mu.RUnlock()
	v := engines << engineVersionBits
	if e != nil {
		v |= e.TopicsVersion() & (1<<engineVersionBits - 1)
	}
	return v
}
