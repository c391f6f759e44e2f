package cluster

import (
	"errors"
	"runtime/debug"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/closephase"
)

// closeClientsFirst runs, on the node's orderly close, the first phase of
// the leader engine's close before the node fences its store: the
// consumers opened on e in-process commit their final offsets and leave
// their groups, and the groups' kept starts are stored, through Raft while
// this node still leads, as Engine.Close would do on a store of its own.
// Fenced first, those commits would be refused, and a group would get the
// messages its consumers handled again after a restart. A tenure that
// ended already (rs fenced, or Raft in a later term) is left to the fence,
// as after a leadership loss.
//
// It waits for that phase engineCloseBound at most from began, or until a
// CloseContext gave the node's close up, then goes on without it: the
// fence refuses what it still writes, and the engine's close (which runs
// the phase again, and waits for it) has what is left of that bound
// (closeEngine), so the phase and the rest of the engine's close together
// take no longer than the engine's close alone took before.
// The writes it has on their way are given up closeDrain after the node's
// close began (giveUpWritesOnClose), so a leader that commits nothing does
// not hold it. Once the tenure ends meanwhile (the leadership is lost,
// or a write fenced the store), it goes on at once (watchTenure): what
// the phase still writes can no longer be stored under the tenure. A
// panic in it is logged (the node's logger, at error level)
// and left to the engine's close, which meets it again.
func (n *Node) closeClientsFirst(e *equeue.Engine, rs *replicatedStore, began time.Time) {
	end := n.closeClients(e, rs, began)
	if n.opts.clientsPhaseHook != nil {
		n.opts.clientsPhaseHook(end)
	}
}

// clientsPhaseEnd says how the close's consumer phase ended
// (closeClientsFirst).
type clientsPhaseEnd int

const (
	clientsPhaseSkipped     clientsPhaseEnd = iota // the tenure had ended already
	clientsPhaseDone                               // the phase returned
	clientsPhaseBound                              // engineCloseBound passed
	clientsPhaseGivenUp                            // a CloseContext gave the close up
	clientsPhaseTenureEnded                        // the tenure ended: leadership lost, or fenced
)

// closeClients is closeClientsFirst, returning how the phase ended.
func (n *Node) closeClients(e *equeue.Engine, rs *replicatedStore, began time.Time) clientsPhaseEnd {
	if !n.tenureLive(rs) {
		return clientsPhaseSkipped
	}
	done := make(chan error, 1)
	go func() {
		finished := false
		defer func() {
			if finished {
				return
			}
			// nil: runtime.Goexit.
			n.log.Error("closing the leader engine's consumers before its fence panicked", "panic", recover(), "stack", string(debug.Stack()))
			done <- errClientsClosePanicked
		}()
		err := closephase.CloseClients(e)
		finished = true
		done <- err
	}()
	ended, stop := n.watchTenure(rs)
	defer stop()
	t := time.NewTimer(closeBoundLeft(began, time.Now()))
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil && err != errClientsClosePanicked {
			n.log.Warn("leader engine's consumers closed with errors", "err", err)
		}
		return clientsPhaseDone
	case <-t.C:
		n.log.Warn("the close of the leader engine's consumers held: the store is fenced without waiting for it", "bound", engineCloseBound)
		return clientsPhaseBound
	case <-n.closeGivenUp.Done():
		return clientsPhaseGivenUp
	case <-ended:
		// Its commits can no longer be stored under this tenure: the
		// fence refuses what it still writes.
		n.log.Warn("the leader's tenure ended while its engine's consumers closed: the store is fenced without waiting for them")
		return clientsPhaseTenureEnded
	}
}

// errClientsClosePanicked tells closeClientsFirst that the phase it ran
// panicked, and that the panic was logged.
var errClientsClosePanicked = errors.New("cluster: closing the leader engine's consumers panicked")

// String names how the phase ended (logs, tests).
func (e clientsPhaseEnd) String() string {
	switch e {
	case clientsPhaseSkipped:
		return "skipped"
	case clientsPhaseDone:
		return "done"
	case clientsPhaseBound:
		return "bound passed"
	case clientsPhaseGivenUp:
		return "given up"
	case clientsPhaseTenureEnded:
		return "tenure ended"
	}
	return "unknown"
}
