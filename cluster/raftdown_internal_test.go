package cluster

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// heldFuture is an apply future Raft never answers, as an entry left in
// its buffered apply channel when it shuts down; release answers it.
type heldFuture struct{ release chan error }

func (f heldFuture) Error() error  { return <-f.release }
func (f heldFuture) Index() uint64 { return 0 }
func (f heldFuture) Response() any { return nil }

// A wait for an entry Raft never answers ends, unknown, once Raft was shut
// down (failStop), so the engine's close does not wait for ever; the
// tenure is fenced, and an answered entry is still reported as answered.
func TestReplicatedStore_WaitEndsWhenRaftIsDown(t *testing.T) {
	s := &replicatedStore{down: make(chan struct{})}
	f := heldFuture{release: make(chan error, 1)}
	done := make(chan error, 1)
	go func() { done <- s.finish(f) }()
	s.raftDown()
	err := <-done
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "an unanswered entry's outcome is unknown")
	assert.ErrorIs(t, s.fenceCause(), equeue.ErrIndeterminate, "the tenure is fenced")
	f.release <- errors.New("late") // lets the waiting goroutine end

	// Answered before the wait looked: the answer stands.
	s2 := &replicatedStore{down: make(chan struct{})}
	answered := heldFuture{release: make(chan error, 1)}
	answered.release <- nil
	require.NoError(t, s2.finish(answered))
	s2.raftDown()
	s2.raftDown() // twice is fine
}
