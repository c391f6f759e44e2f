package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// openHeld opens an engine on a heldReads store with topic t (one queue)
// holding three messages, and joins member m to group name, which starts
// from a time an hour ago.
func openHeld(t *testing.T, name string) (*equeue.Engine, *heldReads, equeue.Assignment) {
	t.Helper()
	ctx := ctxT(t)
	s := &heldReads{Memory: store.NewMemory(), q: firstTopicQueue0}
	e, err := equeue.Open("", &equeue.Options{Store: s})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b", "c")})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: name, Member: "m", Incarnation: "i",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromTimestamp, FromTime: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	return e, s, a
}

// commitWhileHeld commits off for the member's grant while s holds a read
// of the store, and fails the test when the commit waits for that read.
func commitWhileHeld(t *testing.T, e *equeue.Engine, s *heldReads, group string, grant equeue.Grant, off int64) {
	t.Helper()
	select {
	case <-s.inRead:
	case <-time.After(waitLong):
		close(s.release)
		t.Fatal("the start was not searched for in the store")
	}
	committed := make(chan error, 1)
	go func() {
		committed <- e.CommitOffsets(ctxT(t), &equeue.CommitRequest{Group: group, Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: off}}})
	}()
	select {
	case err := <-committed:
		close(s.release)
		require.NoError(t, err)
	case <-time.After(waitLong):
		close(s.release)
		<-committed
		require.FailNow(t, "the commit waited for the search's store read")
	}
}

// TestFetchOffsets_StartFromATimeDoesNotHoldUpCommits: a member granted a
// queue its group (starting from a timestamp) has no offset in fetches
// where to start, which searches the store. A slow read there does not
// hold up the group's commits; one that lands meanwhile is what the fetch
// answers and keeps, not the start it found. The search ran under the
// group's locks, so the commit waited for it.
func TestFetchOffsets_StartFromATimeDoesNotHoldUpCommits(t *testing.T) {
	ctx := ctxT(t)
	e, s, a := openHeld(t, "stamp")

	s.arm()
	type fetched struct {
		ocs []equeue.OffsetCommit
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		ocs, err := e.FetchOffsets(ctx, "stamp", "m", a.Queues)
		done <- fetched{ocs, err}
	}()
	commitWhileHeld(t, e, s, "stamp", a.Queues[0], 2)
	f := <-done
	require.NoError(t, f.err)
	require.Len(t, f.ocs, 1)
	assert.Equal(t, int64(2), f.ocs[0].Offset, "the commit that landed during the search")
	assert.Equal(t, int64(2), queueRow(t, e, "stamp").Committed)

	// Without a commit meanwhile, the start found is stored and answered.
	a2, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "stamp2", Member: "m", Incarnation: "i",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromTimestamp, FromTime: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	ocs, err := e.FetchOffsets(ctx, "stamp2", "m", a2.Queues)
	require.NoError(t, err)
	require.Len(t, ocs, 1)
	assert.Equal(t, int64(0), ocs[0].Offset)
	assert.Equal(t, int64(0), queueRow(t, e, "stamp2").Committed)
}

// TestResetOffsets_ToATimeDoesNotHoldUpCommits: a reset to a time searches
// every queue of the group in the store. A slow read there does not hold
// up the group's commits; the reset, which comes after them, moves the
// offset where the search found it. The search ran under the group's
// locks, so the commit waited for it.
func TestResetOffsets_ToATimeDoesNotHoldUpCommits(t *testing.T) {
	ctx := ctxT(t)
	e, s, a := openHeld(t, "stamp")
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "stamp", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 1}}}))

	s.arm()
	reset := make(chan error, 1)
	go func() {
		reset <- e.ResetOffsets(ctx, "stamp", equeue.ResetRequest{To: equeue.ResetToTime, Time: time.Now().Add(-time.Hour)})
	}()
	commitWhileHeld(t, e, s, "stamp", a.Queues[0], 2)
	require.NoError(t, <-reset)
	assert.Equal(t, int64(0), queueRow(t, e, "stamp").Committed, "the reset moved the offset to the time's first message")
}
