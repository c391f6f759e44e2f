package equeue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Engine.Close redoes the final commit of a broadcasting consumer whose
// CloseContext was cut, once it found the member's session running; a
// new incarnation of the member ID may take the ID between that check
// and the commit. The old incarnation's late commit must not move the
// new incarnation's offset back: the engine refuses a commit of an
// incarnation other than the live member's (ErrNotMember). Before, it
// stored it, and the member's offset went back from 5 to 3.
func TestEngineClose_CutCloseRedoOfAReplacedIncarnationCommitsNothing(t *testing.T) {
	dir := t.TempDir()
	opts := &equeue.Options{SessionTimeout: time.Hour} // the session never lapses here
	e, err := equeue.Open(dir, opts)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			assert.NoError(t, e.Close())
		}
	}()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
	require.NoError(t, err)

	var mu sync.Mutex
	handled := 0
	subs := []equeue.Subscription{{Topic: "t"}}
	old, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", Model: equeue.Broadcasting,
		Subscriptions: subs, CommitInterval: time.Hour,
		Handler: func(context.Context, *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			handled++
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, old.Start(ctx))
	eventually(t, waitLong, func() bool { mu.Lock(); defer mu.Unlock(); return handled == 3 }, "the old incarnation handled the messages")
	cut, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, old.CloseContext(cut), context.Canceled, "its final commit and leave are cut")
	require.Less(t, committedOf(t, e, "g", "a"), int64(3), "what it handled is not committed")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("4", "5")})
	require.NoError(t, err)

	// Between the redo's check of the session and its commit, the old
	// member goes (a leave that names no incarnation, as an old client's)
	// and a new incarnation of its ID joins and commits all five.
	// The hook runs on a goroutine of Engine.Close: it reports with assert.
	ran := false
	equeue.OnCutCloseRedo(e, func() {
		ran = true
		if !assert.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"})) {
			return
		}
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting,
			Subscriptions: subs, Incarnation: "the-new-one"})
		if !assert.NoError(t, err) || !assert.Len(t, a.Queues, 1) {
			return
		}
		assert.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "the-new-one",
			Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 5}}}))
		assert.Equal(t, int64(5), committedOf(t, e, "g", "a"))
	})
	t.Cleanup(func() { equeue.OnCutCloseRedo(e, nil) })

	closed = true
	err = e.Close()
	require.True(t, ran, "Engine.Close redid the cut close")
	assert.ErrorIs(t, err, equeue.ErrNotMember, "the old incarnation's commit is refused, and reported")
	e2, err := equeue.Open(dir, opts)
	require.NoError(t, err)
	defer func() { assert.NoError(t, e2.Close()) }()
	assert.Equal(t, int64(5), committedOf(t, e2, "g", "a"), "the member's offset stayed where the new incarnation committed it")
}
