package cluster

import "github.com/equeue-go/equeue"

// MaxMessageSize is the most bytes one message may take encoded, as the
// engine's Options.MaxMessageSize (Options.Engine) sets it,
// equeue.DefaultMaxMessageSize when that is unset or 0. The leader's
// engine checks each append, and refuses also a message its store could
// not hold, so its limit may be smaller, never larger.
func (n *Node) MaxMessageSize() int {
	if n.opts.Engine != nil && n.opts.Engine.MaxMessageSize > 0 {
		return n.opts.Engine.MaxMessageSize
	}
	return equeue.DefaultMaxMessageSize
}
