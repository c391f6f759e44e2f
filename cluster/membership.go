package cluster

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Changing the cluster's voters. These run on the leader; a follower
// refuses them with a *NotLeaderError.

// awaitChange waits for the configuration change f, or for ctx (the
// change may still happen then). Whenever Raft gives the change's outcome,
// even after ctx ended, the lease counts the voters of the configuration
// as it then stands (lease.go): a removed server, which answers no more,
// must stop counting toward the majority the lease needs.
func (n *Node) awaitChange(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() {
		err := f.Error()
		n.refreshVoters()
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
// a voter (or updates its address). It catches up from a snapshot and the
// log while the cluster goes on serving.
func (n *Node) AddVoter(ctx context.Context, id, raftAddr string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	// It counts for the lease before it counts for Raft, and until Raft
	// gives the change's outcome (awaitChange).
	n.lease.addVoter(raft.ServerID(id))
	if err := n.awaitChange(ctx, n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, changeTimeout)); err != nil {
		return fmt.Errorf("cluster: add voter %s: %w", id, err)
	}
	return nil
}

// refreshVoters reads the voters of the latest configuration for the
// lease (lease.go).
func (n *Node) refreshVoters() {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	n.lease.setVoters(f.Configuration())
}

// RemoveServer removes the node id from the cluster. An id the
// configuration does not hold is refused with ErrUnknownServer.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if err := n.leaderOnly(); err != nil {
		return err
	}
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("cluster: remove server %s: %w", id, err)
	}
	if _, ok := findServer(f.Configuration(), id); !ok {
		return fmt.Errorf("cluster: remove server %q: %w", id, ErrUnknownServer)
	}
	// Raft acts on the new configuration from the moment it is in the
	// leader's log; once it is committed, the removed server no longer
	// counts for the lease either (awaitChange).
	if err := n.awaitChange(ctx, n.raft.RemoveServer(raft.ServerID(id), 0, changeTimeout)); err != nil {
		return fmt.Errorf("cluster: remove server %s: %w", id, err)
	}
	return nil
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
// empty, else to the most up-to-date one).
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
		err := f.Error()
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
	if s, ok := findServer(f.Configuration(), id); ok {
		return s.Address, nil
	}
	return "", fmt.Errorf("cluster: transfer leadership to %q: %w", id, ErrUnknownServer)
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
	// Serving is true while this node's engine is open (it leads).
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
}

// Status returns the node's view of the cluster.
func (n *Node) Status() Status {
	_, leaderID := n.raft.LeaderWithID()
	s := Status{ID: n.opts.ID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		LeaderID: string(leaderID), AppliedIndex: n.raft.AppliedIndex(), LastLogIndex: n.raft.LastIndex(),
		Tenures: n.tenures.Load(), SnapshotsInstalled: n.fsm.restores.Load(), LeaderChanges: n.leaderChanges.Load(), LastContact: n.raft.LastContact()}
	if f := n.failure.Load(); f != nil {
		s.Failure = (*f).Error()
	}
	s.FirstLogIndex, _ = n.logs.FirstIndex()
	st := n.raft.Stats()
	s.CommitIndex, _ = strconv.ParseUint(st["commit_index"], 10, 64)
	if fs := n.fsm.current(); fs.leaderID == s.LeaderID {
		s.LeaderAddr, s.LeaderKafkaAddr = fs.clientAddr, fs.kafkaAddr
	}
	n.mu.RLock()
	s.Serving = n.engine != nil
	n.mu.RUnlock()
	s.LeaseHeld = s.Serving && n.leaseHeld()
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, sv := range f.Configuration().Servers {
			s.Servers = append(s.Servers, Server{ID: string(sv.ID), RaftAddr: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
		}
	}
	return s
}
