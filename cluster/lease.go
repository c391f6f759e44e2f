package cluster

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// A leader serves calls only while it holds a lease.
//
// Reads (pulls, routes, committed offsets, group state) come from the
// leader's own store and memory. A leader that was paused (SIGSTOP, a
// long GC or VM stall) or cut off from the others may not know yet that
// another node leads: hashicorp/raft steps it down only when its leader
// loop next checks that a majority answered recently, and the node closes
// its engine only after that. Meanwhile the other nodes may have elected
// a leader and committed writes this node does not have, so its reads
// would go back in time: a message acknowledged a moment ago missing, a
// group's committed offset lower than one already read. (The multi-process
// test found a non-linearizable read so, after a SIGSTOP of the leader.)
//
// A follower that answered one of this leader's AppendEntries calls (a
// heartbeat, sent every tenth of the heartbeat timeout, or entries) with
// success does not vote for another node until a heartbeat timeout has
// passed since it received the call: hashicorp/raft refuses votes while
// it knows a leader, and forgets the leader only after that timeout
// without contact. So when a majority of the voters, counting this node,
// answered calls sent within the lease (nine tenths of the heartbeat
// timeout) no other node can have been elected, and this
// node's store holds every write acknowledged so far. The node checks
// that before it serves any call (Engine); a call it refuses fails with a
// *NotLeaderError, and nothing was done.
//
// A follower that stops forgets its leader and, restarted at once, would
// vote at once: Open therefore starts the Raft member of a node that ran
// before no sooner than a heartbeat timeout after it began, when every
// lease its last answers granted has run out. The bound still assumes the
// nodes' clocks run at about the same rate; writes never depend on it
// (Raft commits them).

// leaseState is what the lease check reads: the voters of the current
// configuration and how long the lease lasts.
type leaseState struct {
	voters atomic.Pointer[[]raft.ServerID]
	// transferring is set while this node hands its leadership over: the
	// target may be elected before this node learns of it, so no lease is
	// held then. transfers counts the transfers asked of Raft whose
	// outcome Raft has not given yet (a caller may stop waiting first).
	transferring atomic.Bool
	transfers    atomic.Int64
	// fresh is when the last transfer's outcome came (Unix nanoseconds):
	// answers to calls sent before it carry no lease. A follower votes
	// for a transfer's target though it knows this leader (the target's
	// vote request says it is a transfer), so an answer it gave before
	// that promises nothing: the target may have won and written while
	// this node, cut off one way, learned of it only as a failed transfer.
	fresh  atomic.Int64
	length time.Duration
}

// transferEnded records that a transfer's outcome came at now (before
// the transfer stops counting as in progress).
func (l *leaseState) transferEnded(now time.Time) {
	n := now.UnixNano()
	for {
		old := l.fresh.Load()
		if old >= n || l.fresh.CompareAndSwap(old, n) {
			return
		}
	}
}

// setVoters records the voters of cf (called when this node starts
// leading and after it changed the configuration).
func (l *leaseState) setVoters(cf raft.Configuration) {
	var v []raft.ServerID
	for _, s := range cf.Servers {
		if s.Suffrage == raft.Voter {
			v = append(v, s.ID)
		}
	}
	l.voters.Store(&v)
}

// addVoter counts id as a voter before the change that makes it one
// commits: a larger configuration only asks for more answers.
func (l *leaseState) addVoter(id raft.ServerID) {
	old := l.voters.Load()
	var v []raft.ServerID
	if old != nil {
		if slices.Contains(*old, id) {
			return
		}
		v = slices.Clone(*old)
	}
	v = append(v, id)
	l.voters.Store(&v)
}

// held reports whether self, leading in term, holds the lease at now: a
// majority of the voters (self among them) answered calls of this term
// sent less than the lease before now, and after the last transfer ended. answered returns a follower's
// latest successful answer (ok false when it never answered).
func (l *leaseState) held(self raft.ServerID, term uint64, now time.Time, answered func(raft.ServerID) (answeredCall, bool)) bool {
	if l.transferring.Load() || l.transfers.Load() > 0 {
		return false
	}
	vp := l.voters.Load()
	if vp == nil {
		return false
	}
	voters := *vp
	since := time.Unix(0, l.fresh.Load())
	fresh := 0
	for _, id := range voters {
		if id == self {
			fresh++
			continue
		}
		if c, ok := answered(id); ok && c.term == term && now.Sub(c.at) < l.length && c.at.After(since) {
			fresh++
		}
	}
	return fresh > len(voters)/2
}

// leaseHeld reports whether this node leads and holds the lease.
func (n *Node) leaseHeld() bool {
	if n.raft.State() != raft.Leader {
		return false
	}
	return n.lease.held(raft.ServerID(n.opts.ID), n.raft.CurrentTerm(), time.Now(), n.ptrans.answered)
}
