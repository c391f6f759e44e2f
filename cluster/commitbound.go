package cluster

import (
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// A follower commits only entries it has checked against its leader's log.
//
// hashicorp/raft (v1.7.3) sets a follower's commit index, once an
// AppendEntries call passed its consistency check, to the smaller of the
// leader's commit index and the follower's own last log index. The Raft
// paper bounds it by the last entry the call carries instead: the entries
// after it may be a deposed leader's own, which no other node holds and
// the new leader will overwrite. A call that proves less of the log than
// the follower holds (no entries, as when the leader thinks the follower
// is up to date) with a commit index past it makes such a node apply
// its uncommitted suffix. Its store then holds writes no other node has
// and refuses the next leader's entries at those offsets
// (errOffsetMismatch): the multi-process Jepsen test found a node stuck
// that way after a SIGSTOP of a leader holding an unreplicated write.
// (The same flaw, fixed elsewhere: atomix/copycat issue 265, CCF pull
// request 8172.)
//
// verifiedCommit bounds a call's commit index to the last index the call
// proves: its last entry, or its previous entry when it has none. Every
// call a node receives is bounded before Raft sees it (the relay below),
// and every call it sends too, so a follower that does not bound them is
// safe behind this node.

// verifiedCommit lowers args' commit index to the last index args proves
// the follower's log holds as the leader's does.
func verifiedCommit(args *raft.AppendEntriesRequest) {
	bound := args.PrevLogEntry
	if n := len(args.Entries); n > 0 {
		bound = args.Entries[n-1].Index
	}
	if args.LeaderCommitIndex > bound {
		args.LeaderCommitIndex = bound
	}
}

// commitRelay hands the calls a transport receives to Raft, each
// AppendEntries call's commit index bounded (verifiedCommit).
type commitRelay struct {
	// installed, when set, is told of each snapshot Raft installed
	// (snapinstall.go), before Raft sees the next call; set before Raft
	// starts.
	installed func(index, term uint64)
	// clusterID, when set, returns this node's cluster ID ("" when it has
	// none yet): calls of another cluster are refused (clusterid.go). Set
	// before Raft starts, with log.
	clusterID func() string
	log       *slog.Logger
	// foreign is the leader last refused as another cluster's
	// (foreignleader.go).
	foreign foreignLeader

	once     sync.Once
	stopOnce sync.Once
	out      chan raft.RPC
	stop     chan struct{}
	done     chan struct{}
}

// start begins relaying in's calls, once; it returns the channel Raft
// reads.
func (r *commitRelay) start(in <-chan raft.RPC) <-chan raft.RPC {
	r.once.Do(func() {
		r.out, r.stop, r.done = make(chan raft.RPC), make(chan struct{}), make(chan struct{})
		go r.run(in)
	})
	return r.out
}

func (r *commitRelay) run(in <-chan raft.RPC) {
	defer close(r.done)
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-r.stop:
			return
		}
		if err := r.refuseForeign(&rpc); err != nil {
			rpc.Respond(nil, err)
			continue
		}
		if args, ok := rpc.Command.(*raft.AppendEntriesRequest); ok {
			verifiedCommit(args)
		}
		install := r.watchInstall(&rpc)
		select {
		case r.out <- rpc:
		case <-r.stop:
			if install != nil {
				rpc.RespChan = install.caller
			}
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		if install != nil && !r.awaitInstall(install) {
			return
		}
	}
}

// refuseForeign returns an error matching ErrForeignCluster, and logs
// it, when rpc carries entries or a snapshot of another cluster
// (clusterid.go); Raft is then not to see it.
func (r *commitRelay) refuseForeign(rpc *raft.RPC) error {
	if r.clusterID == nil {
		return nil
	}
	own := r.clusterID()
	var err error
	var from raft.RPCHeader
	switch c := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		err, from = foreignEntries(c, own), c.RPCHeader
		if err == nil && ownsEntries(c, own) {
			r.foreign.taken(from)
		}
	case *raft.InstallSnapshotRequest:
		err, from = checkSnapshot(rpc, own), c.RPCHeader
	}
	if err != nil {
		r.foreign.refused(from)
	}
	if err != nil && r.log != nil {
		r.log.Error("refused a leader of another cluster: this node's directory holds another cluster's data; remove it from that cluster, or empty its directory to add it as a new node",
			"leader", string(from.ID), "leader_addr", string(from.Addr), "err", err)
	}
	return err
}

// close stops relaying (after Raft shut down) and waits until it stopped.
func (r *commitRelay) close() {
	r.once.Do(func() {}) // never start after a close
	if r.stop == nil {
		return
	}
	r.stopOnce.Do(func() { close(r.stop) })
	<-r.done
}

// Consumer returns the calls this node receives, each AppendEntries
// call's commit index bounded (verifiedCommit).
func (t *progressTransport) Consumer() <-chan raft.RPC {
	return t.relay.start(t.NetworkTransport.Consumer())
}

// stopRelay stops handing calls to Raft; Raft must be shut down first.
func (t *progressTransport) stopRelay() { t.relay.close() }
