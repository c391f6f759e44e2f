package equeue

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// TestGroupIdleTTL_ForgettingAnAbsentMemberStallsNoHeartbeat: the deletion
// of an absent broadcasting member's offsets, while the disk holds its
// write, leaves the group's lock to the live members: their heartbeats
// answer, and Groups lists the group, while the deletion waits. It held
// the lock across its write, so a member whose heartbeats waited for it
// could be expired once the disk came back.
func TestGroupIdleTTL_ForgettingAnAbsentMemberStallsNoHeartbeat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The first write deleting an offset: an absent member's being forgotten.
	s := newHeldMetaStore(func(op store.MetaOp) bool { return op.Delete && bytes.HasPrefix(op.Key, keyOffsetPrefix) })
	t.Cleanup(s.open)
	e, err := Open("", &Options{Store: s, GroupIdleTTL: 200 * time.Millisecond, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "other", 1))
	join := func(member string) Assignment {
		a, err := e.JoinGroup(ctx, &JoinRequest{Group: "b", Member: member, Model: Broadcasting, Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	join("live")
	a := join("gone")
	a, err = e.Heartbeat(ctx, &HeartbeatRequest{Group: "b", Member: "gone", KnownVersion: a.Version})
	require.NoError(t, err)
	require.NotEmpty(t, a.Queues)
	_, err = e.FetchOffsets(ctx, "b", "gone", a.Queues) // stores its start: offsets of its own
	require.NoError(t, err)
	g, err := e.groups.group("b")
	require.NoError(t, err)
	gone := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		n := 0
		for k := range g.offsets {
			if k.member == "gone" {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, gone())

	// The member leaves; the disk hangs under its offsets' deletion, which
	// the live member does not need.
	s.armed.Store(true)
	require.NoError(t, e.LeaveGroup(ctx, &LeaveRequest{Group: "b", Member: "gone"}))
	select {
	case <-s.held:
	case <-ctx.Done():
		t.Fatal("the absent member's offsets were never deleted")
	}

	var beat, listed atomic.Bool
	go func() {
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "b", Member: "live"}); err == nil {
			beat.Store(true)
		}
	}()
	go func() {
		if gs, err := e.Groups(ctx); err == nil && len(gs) == 1 {
			listed.Store(true)
		}
	}()
	assert.Eventually(t, beat.Load, 10*time.Second, 5*time.Millisecond,
		"a live member's heartbeat waits for the deletion of another member's offsets")
	assert.Eventually(t, listed.Load, 10*time.Second, 5*time.Millisecond,
		"Groups waits for the deletion of an absent member's offsets")
	if beat.Load() { // else the group's lock is held until the write is let go
		assert.Equal(t, 1, gone(), "nothing is forgotten before its deletion is stored")
	}

	s.open()
	require.Eventually(t, func() bool { return gone() == 0 }, 20*time.Second, 5*time.Millisecond,
		"the absent member's offsets are forgotten once deleted")
	gi, err := e.Group(ctx, "b")
	require.NoError(t, err)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, "live", gi.Members[0].ID, "the live member stays")
}
