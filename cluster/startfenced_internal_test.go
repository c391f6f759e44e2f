package cluster

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestReplicatedStore_WriteRefusedAfterAGivenUpWaitIsNotStoredOnly: a wait
// for an entry Raft never answered was given up (the node closed, or Raft
// shut down under the tenure), which fences the tenure with a cause of
// unknown outcome. A later write is refused before it reaches Raft:
// nothing was done, so its error matches equeue.ErrNotLeader and not
// equeue.ErrIndeterminate, though it still tells the cause. Before, it
// matched both, and a caller that asked for ErrIndeterminate first took
// a refused write for one that may have been stored.
func TestReplicatedStore_WriteRefusedAfterAGivenUpWaitIsNotStoredOnly(t *testing.T) {
	for _, cause := range []error{errClosedUncommitted, errRaftDown} {
		s := &replicatedStore{down: make(chan struct{})}
		f := heldFuture{release: make(chan error, 1)}
		done := make(chan error, 1)
		go func() { done <- s.finish(f) }()
		s.giveUp(cause)
		require.ErrorIs(t, <-done, equeue.ErrIndeterminate, "the given-up entry's outcome is unknown")
		f.release <- errors.New("late") // lets the waiting goroutine end

		_, err := s.start([]byte("later"))
		require.ErrorIs(t, err, equeue.ErrNotLeader, "the later write was refused: %v", err)
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "nothing of the later write reached Raft: %v", err)
		assert.ErrorContains(t, err, cause.Error(), "the error tells why the tenure ended")
		err = s.WriteAsync(oneRecord(0))()
		require.ErrorIs(t, err, equeue.ErrNotLeader)
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "WriteAsync refuses it the same way: %v", err)
	}
}
