package equeue

import (
	"context"
	"sync/atomic"
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
		e.marks.record(g, "gone", Grant{QueueRef: QueueRef{Topic: "t"}, Epoch: 1}, 1, nil) // a member that is not live
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
		e.marks.record("b", "m", Grant{QueueRef: QueueRef{Topic: "t"}, Epoch: 2}, 5, nil) // a pull of group b
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

// TestPullMarks_APullOfADeletedTopicRecordsNothing: a pull that read a
// topic while it was being deleted records its mark after, or before, the
// delete dropped the topic's marks (pullMarks.forgetTopic); either way no
// mark of the deleted topic stays with the member.
func TestPullMarks_APullOfADeletedTopicRecordsNothing(t *testing.T) {
	var p pullMarks
	var deleted atomic.Bool
	g := Grant{QueueRef: QueueRef{Topic: "job"}, Epoch: 1}
	p.record("g", "m", g, 1, &deleted) // before the delete
	p.record("g", "m", Grant{QueueRef: QueueRef{Topic: "keep"}, Epoch: 1}, 1, nil)
	deleted.Store(true)
	p.forgetTopic("job")
	p.record("g", "m", g, 2, &deleted) // a pull that ends after it
	require.Zero(t, p.epoch("g", "m", g.QueueRef), "no mark of the deleted topic")
	require.Equal(t, 1, p.size(), "the other topic's mark stays")
}
