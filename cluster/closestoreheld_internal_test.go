package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNode_PlainCloseIsBoundedWhileAReadHoldsTheStore: nothing of the
// node's engine is held (its close finishes, and nothing is given up),
// but a read of the node's store does not return (here a snapshot stream
// whose writer does not answer, as a read on a hung disk), and the
// store's close waits for it. A plain Close must not wait for it for
// ever: it waits for the stores' close its grace at most, then returns an
// error matching equeue.ErrCloseAbandoned with Raft's listener closed,
// and the stores close in the background once the read returns. Before,
// only a close that had given an engine up bounded that wait.
func TestNode_PlainCloseIsBoundedWhileAReadHoldsTheStore(t *testing.T) {
	r := newHeldRig(t)
	r.open(&Options{})
	read := r.holdRead()

	r.closeIsBounded("a plain Close waits for the stores' close, held by a read")
	r.release()
	require.NoError(t, <-read, "the read finishes once the store answers")
	r.endsOnceReleased()
}
