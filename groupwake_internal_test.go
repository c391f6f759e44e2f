package equeue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldBeat is the answer of a heartbeat held in the background.
type heldBeat struct {
	a   Assignment
	err error
}

// holdHeartbeat starts member's long-polling heartbeat with known as its
// known version, and returns once the engine holds it (the member waits).
func holdHeartbeat(t *testing.T, e *Engine, group, member string, known int64) <-chan heldBeat {
	t.Helper()
	ch := make(chan heldBeat, 1)
	go func() {
		a, err := e.Heartbeat(context.Background(), &HeartbeatRequest{Group: group, Member: member, KnownVersion: known, Wait: time.Hour})
		ch <- heldBeat{a, err}
	}()
	g, err := e.groups.group(group)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		m := g.members[member]
		return m != nil && m.waiting.Load() > 0
	}, 10*time.Second, time.Millisecond, "heartbeat of %s held", member)
	return ch
}

// stillHeld reports whether the held heartbeat has not answered.
func stillHeld(ch <-chan heldBeat) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// answered waits for the held heartbeat's answer.
func answered(t *testing.T, ch <-chan heldBeat) heldBeat {
	t.Helper()
	select {
	case b := <-ch:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("the held heartbeat was not answered")
		return heldBeat{}
	}
}

// TestHeartbeat_WakesOnlyConcernedMembers: a change of a clustering group
// answers the held heartbeats of the members whose answer it changes
// (grants, revoking, pending, their removal), and no other: a join that
// moves nothing from b leaves b's heartbeat waiting until one that does.
func TestHeartbeat_WakesOnlyConcernedMembers(t *testing.T) {
	e, err := Open("", &Options{InMemory: true, SessionTimeout: 2 * time.Hour})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	join := func(member string) Assignment {
		a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: member, Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	t0 := QueueRef{Topic: "t", Queue: 0}
	b := join("b")
	require.Len(t, b.Queues, 1, "b owns t/0")
	c := join("c")
	require.Empty(t, c.Queues)
	require.Zero(t, c.Pending)
	b, err = e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"})
	require.NoError(t, err)

	hb := holdHeartbeat(t, e, "g", "b", b.Version)
	hc := holdHeartbeat(t, e, "g", "c", c.Version)
	d := join("d") // sorts after b: t/0 stays with b; nothing changes for b or c
	assert.Empty(t, d.Queues)
	a := join("a") // sorts first: t/0 is to move from b to a
	assert.Equal(t, 1, a.Pending)

	got := answered(t, hb)
	require.NoError(t, got.err)
	assert.Empty(t, got.a.Queues, "b's heartbeat answers with the change that concerns b, not d's join")
	assert.Equal(t, []Grant{{QueueRef: t0, Epoch: b.Queues[0].Epoch}}, got.a.Revoking)
	assert.NotEqual(t, b.Version, got.a.Version)
	assert.True(t, stillHeld(hc), "c's heartbeat is not answered: neither join concerns c")
	b = got.a

	// The handover's end concerns a (granted) and b (no longer revoking).
	ha := holdHeartbeat(t, e, "g", "a", a.Version)
	hb = holdHeartbeat(t, e, "g", "b", b.Version)
	require.NoError(t, e.ReleaseQueues(ctx, "g", "b", b.Revoking))
	got = answered(t, ha)
	require.NoError(t, got.err)
	assert.Equal(t, []QueueRef{t0}, refsOf(got.a.Queues), "a is granted t/0")
	assert.Zero(t, got.a.Pending)
	got = answered(t, hb)
	require.NoError(t, got.err)
	assert.Empty(t, got.a.Revoking, "b hands nothing over any more")
	assert.True(t, stillHeld(hc), "c's heartbeat is not answered: the handover does not concern c")

	// A heartbeat whose known version is not the member's answers at once.
	now, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "c", Wait: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, c.Version, now.Version, "c's version did not move")

	// The group's deletion concerns every member.
	require.NoError(t, e.DeleteGroup(ctx, "g", DeleteGroupOptions{Force: true}))
	gone := answered(t, hc)
	assert.True(t, errors.Is(gone.err, ErrNotMember) || errors.Is(gone.err, ErrGroupNotFound), "c learns its group is gone: %v", gone.err)
}

// TestHeartbeat_BroadcastWakesOnQueueChangesOnly: in a broadcasting group
// a join changes no other member's answer, and a topic's new queue
// changes every one's.
func TestHeartbeat_BroadcastWakesOnQueueChangesOnly(t *testing.T) {
	e, err := Open("", &Options{InMemory: true, SessionTimeout: 2 * time.Hour})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	join := func(member string) Assignment {
		a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: member, Model: Broadcasting, Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	a := join("a")
	ha := holdHeartbeat(t, e, "g", "a", a.Version)
	join("b")
	require.NoError(t, e.AddQueues(ctx, "t", 1))
	got := answered(t, ha)
	require.NoError(t, got.err)
	assert.Len(t, got.a.Queues, 2, "a's heartbeat answers with the new queue, not b's join")
}

// refsOf returns the queues of grants.
func refsOf(gs []Grant) []QueueRef {
	out := make([]QueueRef, len(gs))
	for i, g := range gs {
		out[i] = g.QueueRef
	}
	return out
}
