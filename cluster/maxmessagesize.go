package cluster

import "github.com/equeue-go/equeue"

// MaxMessageSize is the most bytes one message may take encoded: the
// limit the leader's engine checks each append against
// (equeue.Engine.MaxMessageSize), its Options.MaxMessageSize (Options.Engine,
// equeue.DefaultMaxMessageSize when unset or 0) or the largest value the
// node's store takes when that is smaller. A node that does not lead
// tells the limit its engine would have if it led.
func (n *Node) MaxMessageSize() int {
	if e, err := n.Engine(); err == nil {
		return e.MaxMessageSize()
	}
	limit := equeue.DefaultMaxMessageSize
	if n.opts.Engine != nil && n.opts.Engine.MaxMessageSize > 0 {
		limit = n.opts.Engine.MaxMessageSize
	}
	// As the engine's own: its store is this node's, whose largest value
	// the replicated store passes on unchanged.
	if v := n.st.Limits().MaxValueSize; v > 0 && v < limit {
		limit = v
	}
	return limit
}
