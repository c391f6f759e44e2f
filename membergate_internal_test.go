package equeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stopped is a closed stop channel: wait answers without waiting.
func stopped() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// TestMemberGate_LeaseRunsFromTheSending: a leased gate is in doubt
// before its first confirmation, confirmed by a heartbeat sent within
// the lease, in doubt again when the last heartbeat that got through was
// sent longer than the lease ago (however late its answer came), and
// after a failure until the next confirmation.
func TestMemberGate_LeaseRunsFromTheSending(t *testing.T) {
	const lease = time.Hour
	g := memberGate{lease: lease}
	require.False(t, g.wait(stopped()), "confirmed before any join")
	g.set(time.Now(), true)
	require.True(t, g.wait(stopped()))
	g.set(time.Now(), false)
	require.False(t, g.wait(stopped()), "confirmed after a failed heartbeat")
	late := memberGate{lease: lease}
	late.set(time.Now().Add(-2*lease), true)
	require.False(t, late.wait(stopped()), "confirmed by a heartbeat sent longer than its lease ago")

	var h memberGate // no lease: confirmed until a failure
	require.True(t, h.wait(stopped()))
	h.set(time.Now(), false)
	require.False(t, h.wait(stopped()))
	h.set(time.Now().Add(-2*lease), true)
	require.True(t, h.wait(stopped()))
}

// TestMemberGate_WaitEndsAtTheConfirmation: a runner waiting on a gate
// in doubt goes on once a heartbeat gets through.
func TestMemberGate_WaitEndsAtTheConfirmation(t *testing.T) {
	g := memberGate{lease: time.Hour}
	done := make(chan bool)
	go func() { done <- g.wait(make(chan struct{})) }()
	g.set(time.Now(), true)
	require.True(t, <-done)
}
