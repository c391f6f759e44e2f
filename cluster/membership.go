package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/equeue-go/equeue"
)

// Changing the cluster's voters. These run on the leader; a follower
// refuses them with a *NotLeaderError.

// awaitChange waits for the configuration change f, or for ctx (the
// change may still happen then). Whenever Raft gives the change's outcome,
// even after ctx ended, the lease counts the voters of the configuration
// as it then stands (lease.go): a removed server, which answers no more,
// must stop counting toward the majority the lease needs. Then it calls
// settled, when not nil.
func (n *Node) awaitChange(ctx context.Context, f raft.Future, settled func()) error {
	done := make(chan error, 1)
	go func() {
		n.gone.bind(f) // a change Raft shut down with ends then
		err := f.Error()
		n.refreshVoters()
		if settled != nil {
			settled()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// changeTimeout bounds how long Raft waits to queue a configuration change.
const changeTimeout = 10 * time.Second

func (n *Node) leaderOnly() error {
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	return nil
}

// AddVoter adds the node id, whose Raft transport listens at raftAddr, as
// a voter (or updates the address of a voter other than the leader). The node is added as a
// non-voter first, which catches up from a snapshot and the log while the
// cluster goes on serving, and becomes a voter once its log holds an
// entry the leader appended after adding it: a voter that never catches
// up would count toward every majority from the start (a one-node cluster
// would commit nothing more). When it does not catch up before ctx ends
// (or within addVoterTimeout when ctx has no deadline), or refuses the
// leader's entries or snapshot as a node of another cluster (an error matching
// ErrForeignCluster), it is removed again and AddVoter returns an error
// saying so (for a node that did not catch up, one matching ErrNotCaughtUp
// and the context's error, and ErrPeerAuthFailed when the node refused
// the handshake of the leader's secure stream, NewSecureStream). The address of the leader itself is not
// changed: a new address for its own ID is refused with an error matching
// equeue.ErrInvalidArgument (transfer leadership first, then ask the new
// leader), since a mistyped one would cut it off from its followers. An ID or address of a form Open refuses in Options (an ID
// takes 1-255 bytes of UTF-8 without control characters; an address is
// HOST:PORT naming a host other nodes can dial, with a port from 1), or
// an address another server of the configuration has, is refused with an
// error matching equeue.ErrInvalidArgument, and nothing changes.
func (n *Node) AddVoter(ctx context.Context, id, raftAddr string) error {
	if !validID(id) {
		return fmt.Errorf("cluster: add voter %.255q: %w: a node ID is 1-255 bytes of UTF-8 without control characters", id, equeue.ErrInvalidArgument)
	}
	if !dialableAddr(raftAddr, 1) {
		return fmt.Errorf("cluster: add voter %s: %w: Raft address %q must be HOST:PORT naming a host other nodes can dial", id, equeue.ErrInvalidArgument, raftAddr)
	}
	if err := n.leaderOnly(); err != nil {
		return err
	}
	sid, addr := raft.ServerID(id), raft.ServerAddress(raftAddr)
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("cluster: add voter %s: %w", id, err)
	}
	for _, s := range cf.Configuration().Servers {
		if s.Address == addr && s.ID != sid {
			return fmt.Errorf("cluster: add voter %s: %w: server %s has Raft address %s", id, equeue.ErrInvalidArgument, s.ID, addr)
		}
	}
	if s, ok := findServer(cf.Configuration(), id); ok && id == n.opts.ID && s.Address != addr {
		// The followers would dial this leader there from now on: a
		// mistyped address would cut it off from all of them.
		return fmt.Errorf("cluster: add voter %s: %w: %s is this node, which leads: to change its Raft address (now %s), transfer leadership first, then ask the new leader", id, equeue.ErrInvalidArgument, id, s.Address)
	}
	if s, ok := findServer(cf.Configuration(), id); !ok || s.Suffrage != raft.Voter {
		if err := n.addCaughtUp(ctx, sid, addr); err != nil {
			return fmt.Errorf("cluster: add voter %s: %w", id, err)
		}
	}
	// It counts for the lease before it counts for Raft, and until Raft
	// gives the change's outcome (awaitChange).
	n.lease.addVoter(sid)
	if err := n.awaitChange(ctx, n.raft.AddVoter(sid, addr, 0, changeTimeout), nil); err != nil {
		return fmt.Errorf("cluster: add voter %s: %w", id, err)
	}
	return nil
}

// addVoterTimeout bounds AddVoter's wait for a node to catch up when its
// context has no deadline.
const addVoterTimeout = 5 * time.Minute

// catchUpPoll is how often AddVoter looks at a new node's progress.
const catchUpPoll = 20 * time.Millisecond

// addCaughtUp adds id as a non-voter and waits until its log holds an
// entry of this cluster appended after that; when it does not, it removes
// id again.
func (n *Node) addCaughtUp(ctx context.Context, id raft.ServerID, addr raft.ServerAddress) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, addVoterTimeout)
		defer cancel()
	}
	n.ptrans.forgetCatchUp(id)
	began := time.Now()
	if err := n.awaitChange(ctx, n.raft.AddNonvoter(id, addr, 0, changeTimeout), nil); err != nil {
		return fmt.Errorf("add as non-voter: %w", err)
	}
	err := n.awaitCaughtUp(ctx, id)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotCaughtUp) && n.authFailure != nil {
		// Say why, when the node refused the leader's handshake.
		if aerr := n.authFailure(string(addr), began); aerr != nil {
			err = fmt.Errorf("%w: %w", err, aerr)
		}
	}
	// Removed whatever the caller's context says: a node left as a
	// non-voter that does not follow helps nobody.
	rctx, cancel := context.WithTimeout(context.Background(), changeTimeout)
	defer cancel()
	if rerr := n.awaitChange(rctx, n.raft.RemoveServer(id, 0, changeTimeout), nil); rerr != nil {
		return fmt.Errorf("%w (and removing it again failed: %v)", err, rerr)
	}
	return fmt.Errorf("%w; removed again", err)
}

// awaitCaughtUp appends an entry (replicatedStore.mark) and waits until
// id's log holds it, id refuses it as a node of another cluster, or ctx
// ends.
func (n *Node) awaitCaughtUp(ctx context.Context, id raft.ServerID) error {
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()
	if rs == nil {
		return n.notLeader()
	}
	target, err := rs.mark(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// A leader that commits nothing (its followers refuse its
		// entries) never commits the entry either.
		return fmt.Errorf("%w (the entry for it to catch up to was not committed): %w", ErrNotCaughtUp, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("append an entry for it to catch up to: %w", err)
	}
	t := time.NewTicker(catchUpPoll)
	defer t.Stop()
	for {
		matched, refused := n.ptrans.catchUp(id)
		switch {
		case matched >= target:
			return nil
		case refused != nil:
			return fmt.Errorf("%w: it refused the leader's entries: %v", ErrForeignCluster, refused)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (its log holds up to %d of %d): %w", ErrNotCaughtUp, matched, target, ctx.Err())
		case <-t.C:
		}
	}
}

// refreshVoters reads the voters of the latest configuration for the
// lease (lease.go), and forgets the followers' progress of the servers it
// no longer holds (lag.go).
func (n *Node) refreshVoters() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	n.lease.setVoters(f.Configuration())
	n.ptrans.keepOnly(f.Configuration())
}

// followerPruneEvery is how often a leader forgets the followers'
// progress of servers no longer in its configuration (pruneFollowers).
const followerPruneEvery = 5 * time.Second

// pruneFollowers forgets, on a leader, the followers' progress of the
// servers its latest configuration no longer holds: an answer noted after
// the removal's own pruning (refreshVoters) is forgotten here. Only a
// leader notes answers, and only its Raft loop answers at once whatever
// it is doing (a follower's waits for a snapshot being restored).
func (n *Node) pruneFollowers() {
	if n.raft.State() != raft.Leader {
		return
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	n.ptrans.keepOnly(f.Configuration())
}

// RemoveServer removes the node id from the cluster. An id the
// configuration does not hold is refused with ErrUnknownServer. A voter
// whose removal leaves voters of which fewer than a majority answer this
// leader (counting itself when it stays) is refused with
// ErrWouldLoseQuorum: such a configuration elects no leader until enough
// of them come back. A voter answers when it answered a call of this term
// within two leases (answerWindow): one that has just stopped may still
// count for that long. Removals run one at a time, each checked against
// the configuration the one before left.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	// A caller that stops waiting at once still has its removal made,
	// when no other goes on.
	select {
	case n.removing <- struct{}{}:
	default:
		select {
		case n.removing <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("cluster: remove server %s: waiting for another removal: %w", id, ctx.Err())
		}
	}
	// Held until Raft gives this removal's outcome, even when the caller
	// stops waiting first (awaitChange).
	release := func() { <-n.removing }
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		release()
		return fmt.Errorf("cluster: remove server %s: %w", id, err)
	}
	s, ok := findServer(f.Configuration(), id)
	if !ok {
		release()
		return fmt.Errorf("cluster: remove server %q: %w", id, ErrUnknownServer)
	}
	if s.Suffrage == raft.Voter {
		if voters, answering := n.answeringWithout(f.Configuration(), s.ID); answering <= voters/2 {
			release()
			return fmt.Errorf("cluster: remove server %s: %w (%d of the %d voters left answer)", id, ErrWouldLoseQuorum, answering, voters)
		}
	}
	// Raft acts on the new configuration from the moment it is in the
	// leader's log; once it is committed, the removed server no longer
	// counts for the lease either (awaitChange).
	if err := n.awaitChange(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, changeTimeout), release); err != nil {
		return fmt.Errorf("cluster: remove server %s: %w", id, err)
	}
	return nil
}

// answerWindow is, in leases, how recent a voter's last answer must be
// for it to count as answering (RemoveServer): a heartbeat goes to each
// follower ten times a heartbeat timeout.
const answerWindow = 2

// answeringWithout counts the voters of cf but gone, and those of them
// that answer: this node, and the others that answered a call of the
// current term sent within answerWindow leases.
func (n *Node) answeringWithout(cf raft.Configuration, gone raft.ServerID) (voters, answering int) {
	term, now := n.raft.CurrentTerm(), time.Now()
	for _, s := range cf.Servers {
		if s.Suffrage != raft.Voter || s.ID == gone {
			continue
		}
		voters++
		if string(s.ID) == n.opts.ID {
			answering++
		} else if c, ok := n.ptrans.answered(s.ID); ok && c.term == term && now.Sub(c.at) < answerWindow*n.lease.length {
			answering++
		}
	}
	return voters, answering
}

// findServer returns the server of cf with the node ID id.
func findServer(cf raft.Configuration, id string) (raft.Server, bool) {
	for _, s := range cf.Servers {
		if string(s.ID) == id {
			return s, true
		}
	}
	return raft.Server{}, false
}

// TransferLeadership hands leadership to another voter (to id when not
// empty, else to the most up-to-date one). An id the configuration does
// not hold is refused with ErrUnknownServer; one of a server that does not
// vote (a node AddVoter is still catching up), or this node's own, with an
// error matching equeue.ErrInvalidArgument: nothing is done. A transfer
// still on its way when the node closes ends with raft.ErrRaftShutdown.
func (n *Node) TransferLeadership(ctx context.Context, id string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	// The target may win before this node hears of it: serve nothing
	// until Raft gives the transfer's outcome (lease.go), even when the
	// caller stops waiting first, and whatever other transfer ends
	// meanwhile.
	n.lease.transfers.Add(1)
	var f raft.Future
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, err := n.serverAddr(id)
		if err != nil {
			n.lease.transfers.Add(-1)
			return err
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), addr)
	}
	done := make(chan error, 1)
	go func() {
		// Raft queues a transfer (one at a time) for its leader loop: one
		// still queued when Raft shuts down is never answered, and ends
		// then (raft.ErrRaftShutdown).
		n.gone.bind(f)
		err := f.Error()
		n.lease.transferEnded(time.Now())
		n.lease.transfers.Add(-1)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("cluster: transfer leadership: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: transfer leadership: %w", ctx.Err())
	}
}

func (n *Node) serverAddr(id string) (raft.ServerAddress, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return "", err
	}
	s, ok := findServer(f.Configuration(), id)
	switch {
	case !ok:
		return "", fmt.Errorf("cluster: transfer leadership to %q: %w", id, ErrUnknownServer)
	case id == n.opts.ID:
		return "", fmt.Errorf("cluster: transfer leadership to %q: %w: it is this node, which leads", id, equeue.ErrInvalidArgument)
	case s.Suffrage != raft.Voter:
		// Raft would tell it to stand for election: its vote requests, of
		// a later term, depose this leader, and it cannot win.
		return "", fmt.Errorf("cluster: transfer leadership to %q: %w: it is not a voter", id, equeue.ErrInvalidArgument)
	}
	return s.Address, nil
}

// Server is one member of the cluster's configuration.
type Server struct {
	ID       string // node ID
	RaftAddr string // address of its Raft transport
	Voter    bool   // whether it votes (false: a non-voter catching up)
}

// Status is a node's view of the cluster.
type Status struct {
	ID    string // this node's ID
	State string // Leader, Follower, Candidate, Shutdown
	Term  uint64 // the current Raft term
	// LeaderID and LeaderAddr (client address) name the leader when known.
	LeaderID   string
	LeaderAddr string // the leader's client address
	// LeaderKafkaAddr is the address of the leader's Kafka listener
	// (Options.KafkaAddr), when it has one.
	LeaderKafkaAddr string `json:",omitempty"`
	// Serving is true while this node's engine is open (it leads) and its
	// tenure has not ended (fenced by a failed write, or of an earlier
	// term).
	Serving bool
	// LeaseHeld is true while this node serves calls: its engine is open
	// and a majority of the voters answered it recently (lease.go). A
	// leader that is cut off or was paused keeps Serving for a moment
	// but loses its lease, and refuses every call meanwhile.
	LeaseHeld    bool
	CommitIndex  uint64 // the highest log index known committed
	AppliedIndex uint64 // applied by Raft to the FSM
	// FirstLogIndex and LastLogIndex bound the node's Raft log: entries
	// before FirstLogIndex were compacted into a snapshot.
	FirstLogIndex uint64
	LastLogIndex  uint64 // the last entry in the node's log
	// Tenures counts the engines this node opened as leader since it
	// started: each is a leader change that made it the leader.
	Tenures uint64
	// LeaderChanges counts the leader changes this node observed since it
	// started (each election outcome, including "no leader").
	LeaderChanges uint64
	// SnapshotsInstalled counts snapshots this node loaded into its store
	// since it started (it was too far behind to catch up from the log).
	SnapshotsInstalled uint64
	Servers            []Server // the cluster's configuration
	// LastContact is when a follower last heard from the leader.
	LastContact time.Time
	// Failure, when set, is why the node left the cluster before Close: a
	// write to its Raft log failed. State is then Shutdown; reopen the
	// node (after fixing its disk) to bring it back.
	Failure string
	// ClusterID is the ID of the cluster this node's store belongs to, in
	// hex; empty until the node applied an entry that carries one (a new
	// node, a cluster whose leader runs a version before cluster IDs).
	ClusterID string `json:",omitempty"`
	// Removed is true while the latest configuration this node knows
	// does not list it, though an earlier one did: it was removed from
	// the cluster (RemoveServer). It keeps running as a follower that
	// hears from no leader; it is false again once it is added back.
	Removed bool `json:",omitempty"`
}

// Status returns the node's view of the cluster. It does not wait for a
// Raft log store that does not answer (a hung disk): FirstLogIndex is then
// the first index it last read (firstIndexReader).
func (n *Node) Status() Status {
	_, leaderID := n.raft.LeaderWithID()
	s := Status{ID: n.opts.ID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		LeaderID: string(leaderID), AppliedIndex: n.raft.AppliedIndex(), LastLogIndex: n.raft.LastIndex(),
		Tenures: n.tenures.Load(), SnapshotsInstalled: n.fsm.restores.Load(), LeaderChanges: n.leaderChanges.Load(), LastContact: n.raft.LastContact()}
	if f := n.failure.Load(); f != nil {
		s.Failure = (*f).Error()
	}
	s.FirstLogIndex = n.first.get()
	st := n.raft.Stats()
	s.CommitIndex, _ = strconv.ParseUint(st["commit_index"], 10, 64)
	fs := n.fsm.current()
	if fs.leaderID == s.LeaderID {
		s.LeaderAddr, s.LeaderKafkaAddr = fs.clientAddr, fs.kafkaAddr
	}
	if fs.clusterID != "" {
		s.ClusterID = showID(fs.clusterID)
	}
	n.mu.RLock()
	// An engine reconcile has not closed yet serves nothing once its
	// tenure ended (Engine).
	s.Serving = n.engine != nil && n.tenureLive(n.rstore)
	n.mu.RUnlock()
	s.LeaseHeld = s.Serving && n.leaseHeld()
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		s.Removed = n.membership.note(f.Configuration(), n.opts.ID)
		for _, sv := range f.Configuration().Servers {
			s.Servers = append(s.Servers, Server{ID: string(sv.ID), RaftAddr: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
		}
	}
	return s
}
