package cluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// raftShutdownGrace is how long a node's close waits for Raft's shutdown,
// from when that wait begins, before it goes on without it. Raft's
// shutdown waits for its FSM's goroutine, which an apply held in a store
// write that does not return (a hung disk) holds for ever; past the grace
// the close releases what does not need that goroutine (the transport,
// its connections and listener) and leaves the stores to close in the
// background once the shutdown finishes (release). The node's own
// goroutines that use the stores (storeUsers) are waited for within the
// same grace.
const raftShutdownGrace = engineCloseGrace

// raftStop is the shutdown of a node's Raft: started once (failStop, or
// the node's close), its future kept, so every caller waits for that one
// shutdown. Raft hands a second call of Shutdown a future that answers at
// once, before its goroutines ended.
type raftStop struct {
	once sync.Once
	done chan struct{} // closed once the shutdown finished
	err  error         // the shutdown's error, set before done is closed
}

// stopRaft starts Raft's shutdown, the first time it is called, and
// returns it. The goroutine that waits for its future ends when the
// shutdown finishes, once Raft's FSM returned from its apply.
func (n *Node) stopRaft() *raftStop {
	s := &n.raftStop
	s.once.Do(func() {
		s.done = make(chan struct{})
		f := n.raft.Shutdown()
		go func() {
			s.err = f.Error()
			close(s.done)
		}()
	})
	return s
}

// finished reports whether the shutdown finished.
func (s *raftStop) finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// storesIdle returns a channel closed once Raft's shutdown s finished and
// the node's own goroutines that use the stores (storeUsers) ended: the
// stores may close then. The goroutine that waits for them ends then too.
func (n *Node) storesIdle(s *raftStop) <-chan struct{} {
	idle := make(chan struct{})
	go func() {
		<-s.done
		n.storeUsers.Wait()
		close(idle)
	}()
	return idle
}

// waitFor waits until done is closed, for grace at most from now, and
// reports whether it was.
func waitFor(done <-chan struct{}, grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// errRaftShutdownHeld is the node's close's result when Raft's shutdown
// did not finish within raftShutdownGrace: it and the stores' close go on
// in the background.
var errRaftShutdownHeld = fmt.Errorf("%w: cluster: raft shutdown: the FSM did not return from its apply within %v (its store does not answer); Raft's shutdown and the close of the stores go on in the background",
	equeue.ErrCloseAbandoned, raftShutdownGrace)

// errStoreUsersHeld is the node's close's result when Raft shut down but
// a goroutine of the node's own that uses the stores (storeUsers: the
// full-disk retry, a follower's reclaim) did not return within
// raftShutdownGrace: the close of the stores goes on in the background.
var errStoreUsersHeld = fmt.Errorf("%w: cluster: a full-disk retry or reclaim did not return within %v (its store does not answer); the close of the stores goes on in the background",
	equeue.ErrCloseAbandoned, raftShutdownGrace)
