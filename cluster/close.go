package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/equeue-go/equeue"
)

// Close stops serving, leaves Raft running no more, and closes the stores.
// It does not remove the node from the cluster (see RemoveServer). A
// leader that cannot commit (cut off from its followers, or refused by
// them) closes too: Close waits a little for what it has on its way
// (closeDrain), and a write still on its way then ends with an error
// matching equeue.ErrIndeterminate. A leader engine whose store does not
// answer (a hung disk) holds its close: Close waits for it
// engineCloseBound at most from when the close began, then goes on
// without it, as after a CloseContext gave the close up, and returns an
// error matching equeue.ErrCloseAbandoned; the engine's close goes on in
// the background. The close of the stores, which waits for what that
// engine still does on the node's store, is then waited for
// raftShutdownGrace at most, and goes on in the background past it; so is
// it when nothing was given up but a read of the node's store does not
// return (a hung disk), with the same error. So
// it does for the node's reconcile loop, which a
// leader's engine open that does not return holds: Close waits for it
// loopCloseGrace at most, and the stores close once it ended, the engine
// it opened closed, never served. Raft's shutdown waits for its FSM: an
// apply held in a store write that does not return (a hung disk) holds
// it, and Close waits for it a grace at most (raftShutdownGrace, counted
// from when that wait begins), then closes Raft's transport, its
// connections and listener and returns an error matching
// equeue.ErrCloseAbandoned; Raft's log and the node's store are closed in
// the background once the FSM returns (the directory stays locked by this
// process until then). So it does for the node's own goroutines that use
// its stores (the full-disk retry, which waits behind such an FSM; a
// follower's reclaim): Close does not wait for them before it shuts Raft
// down, only before the stores close. Idempotent: it is
// CloseContext(context.Background()). A close that panicked (an OnEngine
// of the program's own, say) is not finished: every later call returns an
// error matching equeue.ErrCloseUnfinished, never nil.
func (n *Node) Close() error { return n.CloseContext(context.Background()) }

// errCloseStopped is what Close and CloseContext return once the node's
// close stopped before it finished (equeue.ErrCloseUnfinished).
var errCloseStopped = fmt.Errorf("%w: the node's close stopped before it finished (it panicked): Raft and the stores may be neither shut down nor closed", equeue.ErrCloseUnfinished)

// CloseContext is Close that waits for the close only until ctx ends, as
// equeue.Engine.CloseContext. The first call of Close or CloseContext
// starts the close; every call waits for that same close and returns its
// result. When ctx ends first (a store that does not answer: a hung disk
// holds the leader's engine, the FSM or Raft's shutdown), CloseContext
// returns at once an error matching equeue.ErrCloseAbandoned and ctx's
// error, and the close goes on in the background until the store answers
// or it gives the held parts up (as Close says): until then the node's
// directory stays locked by this process, and a later Close waits for the
// close and returns its result. With a ctx that
// never ends (context.Background) it is Close.
//
// Once a CloseContext gave the close up, the node waits for its engine's
// close a little more (engineCloseGrace: the writes on their way are
// given up first), then gives it up as well and goes on: Raft is shut
// down and its transport, connections and listener closed though the
// engine's store does not answer, and the engine's close goes on in the
// background. The node's result, which a later Close returns, then
// matches equeue.ErrCloseAbandoned, and the store is not marked as closed
// cleanly. An FSM whose store does not answer holds Raft's shutdown, which
// the close gives up after its grace, as Close says.
//
// A close that stopped before it finished (a panic, which goes on in the
// goroutine that ran the close, as for equeue.Engine.CloseContext; one in
// the leader engine's close too, unless the node gave that close up) makes
// every later call return an error matching equeue.ErrCloseUnfinished. A
// panic in an engine's close the node gave up, or that the node's own loop
// ran when a tenure ended, is logged (the node's Logger, at error level):
// nobody waits for that close, and the node goes on.
//
// Abandoning the close loses nothing the node acknowledged: a write it
// answered is in the Raft log of a majority of the voters, and a host that
// exits then leaves the directory to be recovered by the next Open, as
// after a crash.
//
// A nil ctx or node returns equeue.ErrInvalidArgument and closes nothing.
func (n *Node) CloseContext(ctx context.Context) error {
	if n == nil {
		return fmt.Errorf("%w: nil node", equeue.ErrInvalidArgument)
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument)
	}
	err := n.closer.Wait(ctx, n.shutdown, errCloseStopped, equeue.ErrCloseAbandoned)
	if errors.Is(err, equeue.ErrCloseAbandoned) {
		n.giveUpClose()
	}
	return err
}

// closeEngine closes e, the engine of a tenure that ended, and waits for
// its close until a CloseContext gave the node's close up and
// engineCloseGrace passed since (however long the close ran before), or
// the node's close began and engineCloseBound passed since (since began
// when set: the node's close closed the engine's consumers first,
// closeClientsFirst, from then on): the node then goes on without it, so
// that
// Raft, its transports and listeners are released though the engine's
// store does not answer, and the engine's close goes on in the background
// until it does. The first close given up is kept for the node's result
// (shutdown). A panic in the engine's close goes on in closeEngine's
// goroutine, as it would in a plain Close of the engine (the node's
// Close's caller gets it), unless the node gave that close up first, or
// loop is set (the node's own reconcile loop closes e, failStop included,
// and no call of the node's waits for it): the panic is then recovered
// and logged (the node's logger, at error level) rather than left to end
// the program, and the loop goes on.
func (n *Node) closeEngine(e *equeue.Engine, loop bool, began time.Time) {
	closed := make(chan error, 1)
	stopped := make(chan any)     // what the engine's close panicked with
	gaveUp := make(chan struct{}) // closed once closeEngine waits no more
	go func() {
		finished := false
		defer func() {
			if finished {
				return
			}
			p := recover()
			if loop {
				// No caller to hand the panic to: raised again on the
				// loop's goroutine, it would end the program. nil:
				// runtime.Goexit.
				n.log.Error("the close of an ended tenure's engine panicked", "panic", p, "stack", string(debug.Stack()))
				select {
				case stopped <- errLoopClosePanicked:
				case <-gaveUp:
				}
				return
			}
			select {
			case stopped <- p:
			case <-gaveUp:
				// Nobody waits for this close any more: a panic raised
				// again here would end the program, long after the
				// node's Close returned. nil: runtime.Goexit, which goes
				// on.
				if p != nil {
					n.log.Error("the given-up close of an ended tenure's engine panicked", "panic", p, "stack", string(debug.Stack()))
				}
			}
		}()
		closed <- e.Close()
		finished = true
	}()
	givenUp, grace := n.closeGivenUp.Done(), (<-chan time.Time)(nil)
	closing, bound := n.closing, (<-chan time.Time)(nil)
	for {
		select {
		case err := <-closed:
			if err != nil {
				n.log.Warn("engine of an ended tenure closed with errors", "err", err)
			}
			return
		case p := <-stopped:
			if p == errLoopClosePanicked {
				return // logged
			}
			if p == nil {
				runtime.Goexit() // as the engine's close did
			}
			panic(p)
		case <-givenUp:
			givenUp = nil
			t := time.NewTimer(engineCloseGrace) // from now: the wait it bounds begins
			defer t.Stop()
			grace = t.C
		case <-closing:
			closing = nil
			// A plain Close's bound, from now, or from began when set:
			// the node's close may have spent part of it closing the
			// engine's consumers first (closeClientsFirst).
			t := time.NewTimer(closeBoundLeft(began, time.Now()))
			defer t.Stop()
			bound = t.C
		case <-grace:
			close(gaveUp)
			n.giveUpEngineClose()
			return
		case <-bound:
			close(gaveUp)
			n.giveUpEngineClose()
			return
		}
	}
}

// closeBoundLeft is what is left at now of engineCloseBound counted from
// began, or from now when began is unset or later.
func closeBoundLeft(began, now time.Time) time.Duration {
	if began.IsZero() || began.After(now) {
		return engineCloseBound
	}
	return max(0, engineCloseBound-now.Sub(began))
}

// giveUpEngineClose records that the node gave the close of an ended
// tenure's engine up (closeEngine): the node's result says so.
func (n *Node) giveUpEngineClose() {
	err := fmt.Errorf("%w: the close of an ended tenure's engine was given up", equeue.ErrCloseAbandoned)
	n.engineLeft.CompareAndSwap(nil, &err)
	n.log.Warn("gave up the close of an ended tenure's engine: it goes on in the background", "err", err)
}

// errLoopClosePanicked tells closeEngine that the engine's close its loop
// ran panicked, and that the panic was logged.
var errLoopClosePanicked = errors.New("cluster: the close of an ended tenure's engine panicked")

// engineCloseGrace is how long closeEngine still waits for an engine's
// close once the node's close was given up, counted from then: the writes
// it has on their way are given up closeDrain after the node's close began
// (giveUpWritesOnClose), before the give-up, and its close then ends at
// once unless its store does not answer.
const engineCloseGrace = 2 * closeDrain

// engineCloseBound is how long closeEngine waits for an engine's close
// once the node's close began (a plain Close, which no context bounds),
// counted from then or from when closeEngine began, the later: the
// writes on their way are given up closeDrain after the close began
// (giveUpWritesOnClose), and the engine's close then has engineCloseGrace
// more, as after a CloseContext gave the close up.
const engineCloseBound = closeDrain + engineCloseGrace

// giveUpWritesOnClose gives the writes rs has on their way up (they end
// with errClosedUncommitted, an unknown outcome) once the node closes
// (Close, or a CloseContext) and closeDrain passed, unless stop was
// called first. A leader that commits nothing would otherwise hold its
// engine's close for ever.
func (n *Node) giveUpWritesOnClose(rs *replicatedStore) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-n.closing:
		case <-done:
			return
		}
		t := time.NewTimer(closeDrain)
		defer t.Stop()
		select {
		case <-t.C:
			rs.giveUp(errClosedUncommitted)
		case <-done:
		}
	}()
	return func() { close(done) }
}
