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
	g.set(time.Now(), 0, true)
	require.True(t, g.wait(stopped()))
	g.set(time.Now(), 0, false)
	require.False(t, g.wait(stopped()), "confirmed after a failed heartbeat")
	late := memberGate{lease: lease}
	late.set(time.Now().Add(-2*lease), 0, true)
	require.False(t, late.wait(stopped()), "confirmed by a heartbeat sent longer than its lease ago")

	var h memberGate // no lease: confirmed until a failure
	require.True(t, h.wait(stopped()))
	h.set(time.Now(), 0, false)
	require.False(t, h.wait(stopped()))
	h.set(time.Now().Add(-2*lease), 0, true)
	require.True(t, h.wait(stopped()))
}

// TestMemberGate_WaitEndsAtTheConfirmation: a runner waiting on a gate
// in doubt goes on once a heartbeat gets through.
func TestMemberGate_WaitEndsAtTheConfirmation(t *testing.T) {
	g := memberGate{lease: time.Hour}
	done := make(chan bool)
	go func() { done <- g.wait(make(chan struct{})) }()
	g.set(time.Now(), 0, true)
	require.True(t, <-done)
}

// TestMemberGate_LeaseStaysUnderTheEngineSession: once a confirmation
// tells the engine's session timeout, the lease is at most half of it,
// however long the member's own lease (twice its HeartbeatInterval); a
// later answer that tells none (an older server) keeps the last one
// told, and a gate without a lease gets none.
func TestMemberGate_LeaseStaysUnderTheEngineSession(t *testing.T) {
	g := memberGate{lease: time.Hour}
	require.Equal(t, time.Hour, g.current(), "session unknown")
	g.set(time.Now().Add(-time.Minute), 10*time.Minute, true)
	require.Equal(t, 5*time.Minute, g.current())
	require.True(t, g.wait(stopped()), "sent within half the session")
	g.set(time.Now().Add(-6*time.Minute), 0, true)
	require.Equal(t, 5*time.Minute, g.current(), "an answer without a session forgets the last one")
	late := memberGate{lease: time.Hour}
	late.set(time.Now().Add(-6*time.Minute), 10*time.Minute, true)
	require.False(t, late.wait(stopped()), "confirmed by a heartbeat sent more than half the session ago")
	short := memberGate{lease: time.Second}
	short.set(time.Now(), time.Hour, true)
	require.Equal(t, time.Second, short.current(), "a session longer than twice the lease")
	var none memberGate
	none.set(time.Now(), time.Second, true)
	require.Zero(t, none.current())
}
