package cluster

import "testing"

// TestNode_CloseIsBoundedWhileTheFSMsWriteIsHeld: the FSM of a one-node
// cluster waits in a write to its store that does not return (a hung
// disk) when the node is closed with a plain Close. Raft's shutdown waits
// for the FSM's goroutine, so it cannot finish; Close waits for it only
// a grace, then returns an error matching equeue.ErrCloseAbandoned, with
// Raft's transport and listener closed. Once the store answers, Raft's
// shutdown finishes in the background and the stores close: the
// directory is free again, and nothing is left running. Before, Close
// waited for Raft's shutdown, and so for the store, for ever.
func TestNode_CloseIsBoundedWhileTheFSMsWriteIsHeld(t *testing.T) {
	r := newHeldRig(t)
	r.open(&Options{fsmWriteHook: r.heldBatch(true)})
	sent := r.appendHeld("the append did not reach the FSM's write")

	r.closeIsBounded("Close waits for Raft's shutdown, held by the FSM's write")
	r.endsOnceReleased(sent)
}
