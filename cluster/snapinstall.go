package cluster

import (
	"errors"

	"github.com/hashicorp/raft"
)

// A follower follows its leader again after a snapshot over a log that
// disagrees with it.
//
// A leader sends a snapshot to a follower whose log it cannot match from
// its own, which it compacted: typically a deposed leader whose log ends
// with entries nobody else holds. The Raft paper has the follower keep its
// log after the snapshot only when it holds the snapshot's last entry, and
// discard all of it otherwise. hashicorp/raft (v1.7.3) does neither:
// with raft-boltdb it keeps the log as it is, the disagreeing entry at
// the snapshot's index included; with raft-wal (a MonotonicLogStore) it
// deletes every entry but still believes it holds its old last index. In
// both cases, when that index is at or past the snapshot's, the leader's
// next call, which continues from the snapshot's last entry, fails its
// check there (a term that differs, or an entry not found); the leader
// steps back into what it compacted and sends the snapshot again, and so
// on: the node never follows the log again (hashicorp/raft issue 697).
//
// So the relay (commitbound.go) tells the log of each snapshot Raft
// installed, before Raft sees the next call. When the log holds the
// snapshot's last entry in another term, every entry is dropped, as the
// paper says: all were replaced by the snapshot or disagree with the
// leader. Until Raft stores entries again, a follower's look-up of an
// entry it no longer holds is answered from the snapshot: its last entry
// in the snapshot's term (it is committed: every leader holds it so), any
// later one in no term, which no leader's entry matches, so Raft replaces
// it with the leader's entries and learns its true last index from them.
// Raft never applies such an answer: it has applied the snapshot, and a
// call's commit index never passes what the call proves (commitbound.go).

// logPoint is an entry of the log, by index and term.
type logPoint struct{ index, term uint64 }

// snapshotInstalled is told that Raft installed a snapshot of the log up to
// index, of term. It drops every entry of the log when the log holds the
// entry at index in another term.
func (l *leaderLog) snapshotInstalled(index, term uint64) error {
	if err := l.drain(); err != nil {
		return err
	}
	l.mu.Lock()
	l.installed = logPoint{index: index, term: term}
	l.mu.Unlock()
	var e raft.Log
	switch err := l.inner.GetLog(index, &e); {
	case errors.Is(err, raft.ErrLogNotFound):
		return nil
	case err != nil:
		return err
	case e.Term == term:
		return nil // the log goes on from the snapshot
	}
	first, err := l.inner.FirstIndex()
	if err != nil {
		return err
	}
	last, err := l.inner.LastIndex()
	if err != nil {
		return err
	}
	return l.inner.DeleteRange(first, last)
}

// pastInstalled answers a follower's look-up of an entry at or past the
// installed snapshot's last one that the log does not hold (see above).
func (l *leaderLog) pastInstalled(index uint64, out *raft.Log) bool {
	l.mu.Lock()
	s := l.installed
	l.mu.Unlock()
	switch {
	case s.index == 0 || index < s.index:
		return false
	case index == s.index:
		*out = raft.Log{Index: index, Term: s.term, Type: raft.LogNoop}
	default:
		*out = raft.Log{Index: index, Type: raft.LogNoop}
	}
	return true
}

// pendingInstall is an InstallSnapshot call the relay handed to Raft.
type pendingInstall struct {
	req    *raft.InstallSnapshotRequest
	answer chan raft.RPCResponse   // where Raft answers
	caller chan<- raft.RPCResponse // where the transport waits for it
}

// watchInstall makes an InstallSnapshot call answer to the relay, when
// someone is to be told of installs; it returns nil for other calls.
func (r *commitRelay) watchInstall(rpc *raft.RPC) *pendingInstall {
	req, ok := rpc.Command.(*raft.InstallSnapshotRequest)
	if !ok || r.installed == nil {
		return nil
	}
	p := &pendingInstall{req: req, answer: make(chan raft.RPCResponse, 1), caller: rpc.RespChan}
	rpc.RespChan = p.answer
	return p
}

// awaitInstall waits for Raft's answer to p, tells installed of a
// snapshot installed, and passes the answer on. Raft handles one call at a
// time, so it sees no other call before installed returns. It returns
// false when the relay stops first.
func (r *commitRelay) awaitInstall(p *pendingInstall) bool {
	var resp raft.RPCResponse
	select {
	case resp = <-p.answer:
	case <-r.stop:
		p.caller <- raft.RPCResponse{Error: raft.ErrTransportShutdown}
		return false
	}
	if ok, _ := resp.Response.(*raft.InstallSnapshotResponse); resp.Error == nil && ok != nil && ok.Success {
		r.installed(p.req.LastLogIndex, p.req.LastLogTerm)
	}
	p.caller <- resp
	return true
}
