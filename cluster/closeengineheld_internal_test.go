package cluster

import "testing"

// TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld: the leader's
// engine has a write held in its store (the admission of a write does
// not return, as on a hung disk) when the node is closed with a plain
// Close, no context. The engine's close waits for that write; Close
// waits for it a grace at most, as for Raft's shutdown, then returns an
// error matching equeue.ErrCloseAbandoned with Raft's listener closed.
// Once the store answers, the engine's close and the stores' close finish
// in the background: the directory is free again and nothing is left
// running. Before, only a CloseContext whose context ended bounded the
// wait: a plain Close waited for the store for ever.
func TestNode_PlainCloseIsBoundedWhileTheEnginesStoreIsHeld(t *testing.T) {
	r := newHeldRig(t)
	r.open(&Options{admitHook: r.heldBatch(true)})
	sent := r.appendHeld("the append did not reach the store's admission")

	r.closeIsBounded("a plain Close waits for the engine's close, held by its store")
	r.endsOnceReleased(sent)
}
