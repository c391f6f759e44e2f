package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPullMarks_SweepDoesNotHoldPullsBehindAGroupLock: a group may hold its
// lock across a store write (a join, an offset reset, a delete). A sweep
// of the pull marks that waits for that lock must not hold the marks' own
// lock meanwhile, or every pull of every group (each records a mark)
// waits for that write too (found by review).
func TestPullMarks_SweepDoesNotHoldPullsBehindAGroupLock(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, g := range []string{"a", "b"} {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: g, Member: "m", Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		e.marks.record(g, "gone", Grant{QueueRef: QueueRef{Topic: "t"}, Epoch: 1}, 1) // a member that is not live
	}
	ga, err := e.groups.group("a")
	require.NoError(t, err)

	ga.mu.Lock() // as across a store write
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		e.marks.sweep(e.groups.liveMember)
	}()
	time.Sleep(50 * time.Millisecond) // the sweep is waiting for group a
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		e.marks.record("b", "m", Grant{QueueRef: QueueRef{Topic: "t"}, Epoch: 2}, 5) // a pull of group b
	}()
	select {
	case <-recorded:
	case <-time.After(5 * time.Second):
		t.Error("a pull of another group waited for group a's lock")
	}
	ga.mu.Unlock()
	<-swept
	<-recorded
	require.Equal(t, int64(2), e.marks.epoch("b", "m", QueueRef{Topic: "t"}))
	require.Zero(t, e.marks.epoch("a", "gone", QueueRef{Topic: "t"}), "the mark of a member that is gone is dropped")
}
