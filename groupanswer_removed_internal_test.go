package equeue

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHeartbeat_WokenMemberRemovedBeforeItsAnswerIsNotMember: a held
// heartbeat woken by a change of its member's answer, whose member then
// leaves before the heartbeat reads the answer, answers ErrNotMember, as
// when it left first: never the member's last answer, whose queues the
// group has given to another member meanwhile.
func TestHeartbeat_WokenMemberRemovedBeforeItsAnswerIsNotMember(t *testing.T) {
	e, g, answers := crowdedGroup(t, 3, 3) // m000, m001, m002: a queue each
	ctx := context.Background()
	a := answers["m000"]
	require.Len(t, a.Queues, 1)
	var once sync.Once
	left := make(chan error, 1)
	hook := func(member string) {
		if member == "m000" {
			once.Do(func() { left <- e.LeaveGroup(ctx, &LeaveRequest{Group: "g", Member: "m000"}) })
		}
	}
	e.heartbeatWokenHook.Store(&hook)
	held := holdHeartbeat(t, e, "g", "m000", a.Version)
	m := g.indexed("m000")
	require.Eventually(t, func() bool {
		m.wk.mu.Lock()
		defer m.wk.mu.Unlock()
		return m.wk.ch != nil
	}, 10*time.Second, time.Millisecond, "m000's heartbeat waits on its channel")
	// m002 leaves: m000's answer changes (another queue), waking its heartbeat.
	require.NoError(t, e.LeaveGroup(ctx, &LeaveRequest{Group: "g", Member: "m002"}))
	b := answered(t, held)
	select {
	case err := <-left:
		require.NoError(t, err, "m000 left while its woken heartbeat had not read its answer")
	default:
		t.Fatal("the heartbeat answered without reading its answer after its wake")
	}
	g.mu.Lock()
	owners := map[QueueRef]string{}
	for q, o := range g.owners {
		owners[q] = o.member
	}
	g.mu.Unlock()
	require.ErrorIs(t, b.err, ErrNotMember, "the heartbeat of a member that left answered %+v; the queues' owners are %v", b.a, owners)
	assert.Empty(t, b.a.Queues)
}
