package cluster

import "github.com/hashicorp/raft"

// Heartbeats are handled by Raft's own goroutine, as every other call.
//
// hashicorp/raft (v1.7.3) asks its transport to hand heartbeats (calls
// with neither entries nor a commit index) to a handler that runs on the
// transport's goroutine, beside Raft's main loop, so that a follower
// storing entries still answers them at once. That handler takes the
// caller's term when it is newer, and steps the node down, with nothing
// ordering it against the main loop. A leader whose loop is between
// taking a client's write from its queue and stamping it with the current
// term — as every goroutine of a paused process is when it is continued —
// can then stamp the write with the new leader's term, at an index where
// the new leader has written something else: two different entries share
// an index and a term. The new leader's next call then matches the wrong
// entry as its own, the old leader commits and applies its own write, and
// its store holds a record no other node has (hashicorp/raft issue 695).
// The multi-process Jepsen test found it after a SIGSTOP of a leader with
// writes in flight: the continued node's FSM refused every entry of the
// next leader's tenure, then won an election with its complete-looking log
// and wrote over offsets the others had given out.
//
// The node's transport takes no heartbeat handler, so the network
// transport hands heartbeats to Raft's main loop, which changes its term
// and state only between the steps of its own work. A follower answers a
// heartbeat after the store of entries it is doing; its election timer
// runs on the same loop and so waits too.

// SetHeartbeatHandler is refused: Raft's main loop handles heartbeats.
func (t *progressTransport) SetHeartbeatHandler(func(raft.RPC)) {
	t.NetworkTransport.SetHeartbeatHandler(nil)
}
