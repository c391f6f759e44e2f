package cluster

import (
	"context"
	"errors"

	"github.com/equeue-go/equeue"
)

var _ equeue.Broker = (*Node)(nil)

// Engine returns the engine this node serves while it leads and holds
// its lease (lease.go), or a *NotLeaderError. The engine is closed when
// the node stops leading: a call on it then fails with equeue.ErrClosed.
// Use it for administration (topics, groups); producers and consumers
// should use the Node itself.
func (n *Node) Engine() (*equeue.Engine, error) {
	n.mu.RLock()
	e, rs := n.engine, n.rstore
	n.mu.RUnlock()
	if e == nil || !n.tenureLive(rs) || !n.leaseHeld() {
		return nil, n.notLeader()
	}
	return e, nil
}

// tenureLive says whether the tenure of rs may still serve calls: it was
// not fenced, and Raft is still in the term it started in. reconcile
// closes the engine of an ended tenure, but only on its next pass; until
// then, a call is refused here, before the engine does anything for it
// (a node re-elected in a later term may have missed another leader's
// writes in between).
func (n *Node) tenureLive(rs *replicatedStore) bool {
	return !rs.isFenced() && n.raft.CurrentTerm() == rs.term
}

// notLeader describes the current leader for a refused call.
func (n *Node) notLeader() error {
	addr, id := n.raft.LeaderWithID()
	if id != "" && n.foreignTo(addr, id) {
		id = "" // a leader of another cluster (foreignleader.go)
	}
	err := &NotLeaderError{LeaderID: string(id)}
	if id == "" {
		return err
	}
	if s := n.fsm.current(); s.leaderID == string(id) && s.clientAddr != "" {
		err.LeaderAddr = s.clientAddr
	} else {
		err.LeaderAddr = n.peers[string(id)]
	}
	if string(id) == n.opts.ID {
		// Elected, but the engine is not open yet (or just closed).
		err.LeaderAddr = ""
	}
	return err
}

// call runs f on the current engine. An engine closed under f (its tenure
// ended) did nothing for f: that is reported as not leading, unless f
// says its outcome is unknown (equeue.ErrIndeterminate: see cutShort), or
// the engine's topics changed while f ran (topicsChangedUnder).
func call[T any](n *Node, f func(e *equeue.Engine) (T, error)) (T, error) {
	e, err := n.Engine()
	if err != nil {
		var zero T
		return zero, err
	}
	topics := e.TopicsVersion()
	v, err := f(e)
	if err != nil && e.TopicsVersion() != topics {
		if cut := topicsChangedUnder(err); cut != err {
			return v, cut
		}
	}
	if err != nil && errors.Is(err, equeue.ErrClosed) && !errors.Is(err, equeue.ErrIndeterminate) {
		select {
		case <-n.closing:
		default:
			return v, n.notLeader()
		}
	}
	return v, err
}

func call0(n *Node, f func(e *equeue.Engine) error) error {
	_, err := call(n, func(e *equeue.Engine) (struct{}, error) { return struct{}{}, f(e) })
	return err
}

// The Broker seam: the methods producers, consumers and transports call.

// Route returns a topic's queues.
func (n *Node) Route(ctx context.Context, topic string) (equeue.Route, error) {
	return call(n, func(e *equeue.Engine) (equeue.Route, error) { return e.Route(ctx, topic) })
}

// Append stores messages once a majority of the cluster has them.
func (n *Node) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	return call(n, func(e *equeue.Engine) (equeue.AppendResult, error) { return e.Append(ctx, req) })
}

// Pull reads messages from one queue of the leader.
func (n *Node) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	return call(n, func(e *equeue.Engine) (equeue.PullResult, error) {
		res, err := e.Pull(ctx, req)
		return res, n.leaseKept(res, err)
	})
}

// leaseKept checks the lease again after a pull that found no message. A
// long poll waits up to seconds, far past the lease checked before it: a
// node that lost its lease meanwhile may have missed another leader's
// writes, so its "nothing there" is not an answer; the messages a pull
// found were committed, and are.
func (n *Node) leaseKept(res equeue.PullResult, err error) error {
	if err == nil && res.Status != equeue.PullFound && !n.leaseHeld() {
		return n.notLeader()
	}
	return err
}

// FastPathOwner returns n: its PullStored stands in for its Pull
// (equeue.OwnsFastPaths).
func (n *Node) FastPathOwner() any { return n }

// PullStored is Pull with the records of the messages as stored, for the
// remote server to carry as they are (equeue.Engine.PullStored).
func (n *Node) PullStored(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, *equeue.StoredRecords, error) {
	type pulled struct {
		res    equeue.PullResult
		stored *equeue.StoredRecords
	}
	p, err := call(n, func(e *equeue.Engine) (pulled, error) {
		res, stored, err := e.PullStored(ctx, req)
		return pulled{res, stored}, n.leaseKept(res, err)
	})
	return p.res, p.stored, err
}

// JoinGroup adds a member to a group coordinated by the leader. Every
// refusal matches equeue.ErrJoinRefused, beside the error that says why:
// a *NotLeaderError when this node does not lead (or its tenure ended
// before the engine took the join), the engine's own sentinel otherwise.
// A join cut short by the end of the tenure after the engine's topics
// changed (it may have created some) matches equeue.ErrIndeterminate
// instead, and is no refusal.
func (n *Node) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	a, err := call(n, func(e *equeue.Engine) (equeue.Assignment, error) { return e.JoinGroup(ctx, req) })
	return a, joinRefused(unknownJoin(err))
}

// Heartbeat keeps a member alive.
func (n *Node) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	return call(n, func(e *equeue.Engine) (equeue.Assignment, error) {
		a, err := e.Heartbeat(ctx, req)
		if err = n.groupLeaseKept(err); err != nil {
			return equeue.Assignment{}, err
		}
		return a, nil
	})
}

// groupLeaseKept checks the lease again after a heartbeat answered from
// its group's state. A heartbeat waits for a change of the group up to
// seconds, far past the lease checked before it: a node that lost its
// lease meanwhile may no longer coordinate the group (another leader may
// have taken it over), so its grants, or its "no longer a member", are
// not an answer.
func (n *Node) groupLeaseKept(err error) error {
	if (err == nil || errors.Is(err, equeue.ErrNotMember)) && !n.leaseHeld() {
		return n.notLeader()
	}
	return err
}

// LeaveGroup removes a member.
func (n *Node) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	return call0(n, func(e *equeue.Engine) error { return e.LeaveGroup(ctx, req) })
}

// ReleaseQueues gives up queues a member was asked to hand over.
func (n *Node) ReleaseQueues(ctx context.Context, group, member string, queues []equeue.Grant) error {
	return call0(n, func(e *equeue.Engine) error { return e.ReleaseQueues(ctx, group, member, queues) })
}

// CommitOffsets stores committed offsets (replicated).
func (n *Node) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	return call0(n, func(e *equeue.Engine) error { return e.CommitOffsets(ctx, req) })
}

// FetchOffsets returns committed offsets.
func (n *Node) FetchOffsets(ctx context.Context, group, member string, queues []equeue.Grant) ([]equeue.OffsetCommit, error) {
	return call(n, func(e *equeue.Engine) ([]equeue.OffsetCommit, error) {
		return e.FetchOffsets(ctx, group, member, queues)
	})
}

// SendBack stores a failed message in its group's retry or dead-letter topic.
func (n *Node) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	return call(n, func(e *equeue.Engine) (equeue.SendBackResult, error) { return e.SendBack(ctx, req) })
}
