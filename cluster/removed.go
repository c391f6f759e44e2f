package cluster

import (
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// membership tells whether a node was removed from the cluster
// (Status.Removed): whether the latest configuration it knows leaves it
// out though one it saw before listed it. A new node, whose log holds
// no configuration yet or only ones from before it was added, is not
// removed.
type membership struct {
	// listed is true once the node saw a configuration that lists it
	// (or, at Open, its stored log held one: see seen).
	listed atomic.Bool
}

// seen notes the configuration a node's stored Raft state held at Open:
// one that lists it, or leaves it out though it is not empty (a node that
// was removed, then restarted), makes it a node that was listed.
func (m *membership) seen(cf raft.Configuration) {
	if len(cf.Servers) > 0 {
		m.listed.Store(true)
	}
}

// note notes cf, the latest configuration the node id knows, and
// reports whether the node is removed.
func (m *membership) note(cf raft.Configuration, id string) bool {
	_, in := findServer(cf, id)
	if in {
		m.listed.Store(true)
	}
	return !in && m.listed.Load()
}

// noteMembership notes the latest configuration the node knows, so that
// a node added and removed again between two calls of Status is seen
// removed, and closes the node's connections to the addresses it no
// longer holds (closeRemovedConns). Run's goroutine, every reconcileEvery.
func (n *Node) noteMembership() {
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		n.membership.note(f.Configuration(), n.opts.ID)
		n.closeRemovedConns(f.Configuration())
	}
}

// closeRemovedConns closes the Raft connections this node opened to the
// addresses cf does not hold (a removed node's, or a node's old address),
// and drops them from the transport's pool (dialed.go).
func (n *Node) closeRemovedConns(cf raft.Configuration) {
	for a, dropped := range closeGone(n.trans, n.dialed, cf) {
		n.log.Debug("raft connections to an address no longer in the configuration closed", "address", string(a), "pooled", dropped)
	}
}
