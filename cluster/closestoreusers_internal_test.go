package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestNode_CloseIsBoundedWhileTheFullDiskRetryWaitsForAHeldFSM: the FSM
// of a one-node cluster waits in a write to its store that does not
// return (a hung disk), and the node's timed full-disk retry, which
// shares the FSM's lock, waits behind it. Close gives Raft's shutdown up
// after its grace; it must not wait for the retry's goroutine for ever
// either: it returns an error matching equeue.ErrCloseAbandoned, with
// Raft's listener closed, and the stores close once the store answers.
// Before, Close waited for that goroutine, and so for the store, for
// ever, before it even began Raft's shutdown.
func TestNode_CloseIsBoundedWhileTheFullDiskRetryWaitsForAHeldFSM(t *testing.T) {
	r := newHeldRig(t)
	retrying := r.point()
	r.open(&Options{
		fullDiskRetry: time.Millisecond,
		fullDiskRetryHook: func() {
			// The first retry waits until the FSM holds its lock in the
			// held write, and then waits for that lock: a retry that ran
			// and ended before would prove nothing.
			select {
			case <-r.write.entered:
				retrying.enter()
			case <-r.released:
			}
		},
		fsmWriteHook: r.heldBatch(true)})
	sent := r.appendHeld("the append did not reach the FSM's write")
	r.reached(retrying, "the full-disk retry did not run while the FSM was held")
	// The retry's goroutine now waits for the FSM's lock, held by the write.

	r.closeIsBounded("Close waits for the full-disk retry, held behind the FSM's write")
	r.endsOnceReleased(sent)
}

// TestNode_CloseIsBoundedWhileAFollowersReclaimIsHeld: a node that does
// not lead reclaims its store, and the reclaim does not return (a hung
// disk). Close must not wait for it for ever: it returns an error
// matching equeue.ErrCloseAbandoned once its grace passed, with Raft shut
// down and its listener closed, and the stores close once the reclaim
// returns. Before, Close waited for the reclaim's goroutine before it
// began Raft's shutdown, for ever.
func TestNode_CloseIsBoundedWhileAFollowersReclaimIsHeld(t *testing.T) {
	r := newHeldRig(t)
	// Not bootstrapped: the node waits to be added, leading nothing.
	n, err := Open(r.dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0",
		followerReclaim: time.Millisecond,
		reclaimHook:     r.holdAlways})
	require.NoError(t, err)
	r.opened(n)
	r.reached(r.write, "the node did not reclaim its store")

	r.closeIsBounded("Close waits for the held reclaim")
	r.endsOnceReleased()
}
