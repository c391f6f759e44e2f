package cluster

import "github.com/hashicorp/raft"

// watchTenure returns a channel closed once rs's tenure is no longer live
// (tenureLive: this node lost the leadership, or the tenure was fenced),
// as Raft tells the node's state or its leader changed, or as rs is
// fenced (a failed write fences it with nothing for Raft to observe), and
// stop, which ends the watch. The watch's goroutine and Raft observer end with stop,
// or once the channel is closed.
func (n *Node) watchTenure(rs *replicatedStore) (ended <-chan struct{}, stop func()) {
	changed := make(chan raft.Observation, 1)
	obs := raft.NewObserver(changed, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	out, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer n.raft.DeregisterObserver(obs)
		// Registered before the first look: a change after it is seen.
		hook := n.opts.tenureWatchHook
		for n.tenureLive(rs) {
			if hook != nil {
				hook()
				hook = nil
			}
			select {
			case <-changed:
			case <-rs.fencedCh():
			case <-done:
				return
			}
		}
		close(out)
	}()
	return out, func() { close(done) }
}
