package cluster

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNode_CloseIsBoundedWhileASnapshotsPersistIsHeld: a one-node
// cluster takes a snapshot, and its Persist, on Raft's snapshot goroutine
// rather than the FSM's, does not return (the store does not answer its
// reads). Raft's shutdown waits for that goroutine as for the FSM's: a
// plain Close waits for it its grace at most, then returns an error
// matching equeue.ErrCloseAbandoned with Raft's listener closed, and once
// the store answers the snapshot ends, the stores close and nothing is
// left running. It checks that the bound on a held Raft shutdown covers
// a held snapshot too (it held before this test was written).
func TestNode_CloseIsBoundedWhileASnapshotsPersistIsHeld(t *testing.T) {
	r := newHeldRig(t)
	n := r.open(&Options{persistHook: r.holdAlways})
	_, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)

	snapped := make(chan error, 1)
	go func() { snapped <- n.raft.Snapshot().Error() }()
	r.reached(r.write, "the snapshot did not reach its Persist")

	r.closeIsBounded("Close waits for Raft's shutdown, held by the snapshot's Persist")
	r.endsOnceReleased(snapped)
}
