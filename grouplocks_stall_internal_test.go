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

// openTwoMemberGroup opens an engine on s with topic "t" and a group "g" of two
// clustering members, "a" and "b"; it returns the engine and b's answer.
func openTwoMemberGroup(t *testing.T, ctx context.Context, s *heldMetaStore) (*Engine, Assignment) {
	t.Helper()
	t.Cleanup(s.open)
	e, err := Open("", &Options{Store: s, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { s.open(); require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	for _, m := range []string{"a", "b"} {
		_, err = e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: m, Model: Clustering, Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
	}
	b, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"})
	require.NoError(t, err)
	return e, b
}

// awaitHeld waits until s holds a write.
func awaitHeld(t *testing.T, ctx context.Context, s *heldMetaStore) {
	t.Helper()
	select {
	case <-s.held:
	case <-ctx.Done():
		t.Fatal("no write was held")
	}
}

// assertAnswersWhileHeld checks that a heartbeat of member b (one that
// knows its answer, and one that long-polls) and Groups return while s
// holds the group's write.
func assertAnswersWhileHeld(t *testing.T, ctx context.Context, e *Engine, b Assignment, groups int) {
	t.Helper()
	var beat, polled, listed atomic.Bool
	go func() {
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"}); err == nil {
			beat.Store(true)
		}
	}()
	go func() {
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b", KnownVersion: b.Version, Wait: 50 * time.Millisecond}); err == nil {
			polled.Store(true)
		}
	}()
	go func() {
		if gs, err := e.Groups(ctx); err == nil && len(gs) == groups {
			listed.Store(true)
		}
	}()
	assert.Eventually(t, beat.Load, 10*time.Second, 5*time.Millisecond,
		"a member's heartbeat waits for its group's write")
	assert.Eventually(t, polled.Load, 10*time.Second, 5*time.Millisecond,
		"a member's long-polling heartbeat waits for its group's write")
	assert.Eventually(t, listed.Load, 10*time.Second, 5*time.Millisecond,
		"Groups waits for one group's write")
}

// TestGroupLocks_ResetWriteStallsNoHeartbeatNorListing: while the disk
// holds a reset's write, the group's members' heartbeats answer and Groups
// lists every group; the reset completes once the write does. The reset
// held the group's lock across its write, so both waited (Groups for
// every group, since it locks each in turn).
func TestGroupLocks_ResetWriteStallsNoHeartbeatNorListing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldMetaStore(func(op store.MetaOp) bool { return !op.Delete && bytes.HasPrefix(op.Key, keyOffsetPrefix) })
	e, b := openTwoMemberGroup(t, ctx, s)
	_, err := e.JoinGroup(ctx, &JoinRequest{Group: "other", Member: "x", Model: Clustering, Subscriptions: []Subscription{{Topic: "t"}}})
	require.NoError(t, err)

	s.armed.Store(true)
	reset := make(chan error, 1)
	go func() { reset <- e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToLatest}) }()
	awaitHeld(t, ctx, s)
	assertAnswersWhileHeld(t, ctx, e, b, 2)

	s.open()
	select {
	case err := <-reset:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the reset never returned")
	}
	a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"})
	require.NoError(t, err)
	assert.Greater(t, a.Epoch, b.Epoch, "the reset fences the grants once stored")
}

// TestGroupLocks_DeleteWriteStallsNoListing: while the disk holds a forced
// DeleteGroup's write, Groups lists the groups and a removed member's
// heartbeat answers that it is no member.
func TestGroupLocks_DeleteWriteStallsNoListing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldMetaStore(func(op store.MetaOp) bool { return op.Delete && bytes.Equal(op.Key, groupKey("g")) })
	e, _ := openTwoMemberGroup(t, ctx, s)

	s.armed.Store(true)
	deleted := make(chan error, 1)
	go func() { deleted <- e.DeleteGroup(ctx, "g", DeleteGroupOptions{Force: true}) }()
	awaitHeld(t, ctx, s)
	var listed, refused atomic.Bool
	go func() {
		if _, err := e.Groups(ctx); err == nil {
			listed.Store(true)
		}
	}()
	go func() {
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"}); err != nil && ctx.Err() == nil {
			assert.ErrorIs(t, err, ErrNotMember)
			refused.Store(true)
		}
	}()
	assert.Eventually(t, listed.Load, 10*time.Second, 5*time.Millisecond, "Groups waits for one group's deletion")
	assert.Eventually(t, refused.Load, 10*time.Second, 5*time.Millisecond, "a removed member's heartbeat waits for its group's deletion")

	s.open()
	select {
	case err := <-deleted:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the deletion never returned")
	}
	gs, err := e.Groups(ctx)
	require.NoError(t, err)
	assert.Empty(t, gs)
}

// TestGroupLocks_FirstJoinWriteStallsNoListing: while the disk holds the
// write of a new group's configuration (its first member's join), Groups
// lists the other groups.
func TestGroupLocks_FirstJoinWriteStallsNoListing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldMetaStore(func(op store.MetaOp) bool { return bytes.Equal(op.Key, groupKey("new")) })
	e, _ := openTwoMemberGroup(t, ctx, s)

	s.armed.Store(true)
	joined := make(chan error, 1)
	go func() {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: "new", Member: "n", Model: Clustering, Subscriptions: []Subscription{{Topic: "t"}}})
		joined <- err
	}()
	awaitHeld(t, ctx, s)
	var listed atomic.Bool
	go func() {
		if _, err := e.Groups(ctx); err == nil {
			listed.Store(true)
		}
	}()
	assert.Eventually(t, listed.Load, 10*time.Second, 5*time.Millisecond, "Groups waits for a new group's first join")

	s.open()
	select {
	case err := <-joined:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("the join never returned")
	}
	gi, err := e.Group(ctx, "new")
	require.NoError(t, err)
	require.Len(t, gi.Members, 1)
}
