package equeue

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue/store"
)

// TestGroupLocks_FrozenHeartbeatGrantsNothingTheResetFences: a heartbeat
// answered while the disk holds a reset's write (from the frozen group)
// hands out the grants the member held before the reset, and a commit or
// an offset fetch under them, made during the write or after it, is
// refused (ErrFenced): the answer lets the member do no more than one
// answered just before the reset began.
func TestGroupLocks_FrozenHeartbeatGrantsNothingTheResetFences(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldMetaStore(func(op store.MetaOp) bool { return !op.Delete && bytes.HasPrefix(op.Key, keyOffsetPrefix) })
	e, _ := openTwoMemberGroup(t, ctx, s)
	// a, the first to join, holds both queues (handing one over to b).
	before, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "a"})
	require.NoError(t, err)
	require.NotEmpty(t, before.Queues)

	s.armed.Store(true)
	reset := make(chan error, 1)
	go func() { reset <- e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToLatest}) }()
	awaitHeld(t, ctx, s)
	frozen, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "a"})
	require.NoError(t, err)
	assert.Equal(t, before.Epoch, frozen.Epoch, "the frozen group answers as before the reset")
	assert.Equal(t, before.Queues, frozen.Queues)

	offs := make([]OffsetCommit, len(frozen.Queues))
	for i, q := range frozen.Queues {
		offs[i] = OffsetCommit{Grant: q}
	}
	committed := make(chan error, 1)
	go func() { committed <- e.CommitOffsets(ctx, &CommitRequest{Group: "g", Member: "a", Offsets: offs}) }()

	s.open()
	require.NoError(t, <-reset)
	select {
	case err := <-committed:
		assert.ErrorIs(t, err, ErrFenced, "a commit made during the reset's write under the frozen answer")
	case <-ctx.Done():
		t.Fatal("the commit never returned")
	}
	assert.ErrorIs(t, e.CommitOffsets(ctx, &CommitRequest{Group: "g", Member: "a", Offsets: offs}), ErrFenced,
		"a commit under the frozen answer once the reset is done")
	_, err = e.FetchOffsets(ctx, "g", "a", frozen.Queues)
	assert.ErrorIs(t, err, ErrFenced, "an offset fetch under the frozen answer once the reset is done")
	after, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "a", KnownVersion: frozen.Version})
	require.NoError(t, err)
	assert.Greater(t, after.Epoch, frozen.Epoch)
}

// TestGroupLocks_HeartbeatsOfAFrozenGroupKeepTheMember: while the disk
// holds a reset's write for several session timeouts, a member that keeps
// heartbeating (answered from the frozen group, its last-seen time set
// through the atomic) is still a member once the write returns and the
// expiry sweep has run; a member that stayed silent is expired.
func TestGroupLocks_HeartbeatsOfAFrozenGroupKeepTheMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldMetaStore(func(op store.MetaOp) bool { return !op.Delete && bytes.HasPrefix(op.Key, keyOffsetPrefix) })
	t.Cleanup(s.open)
	const session = 500 * time.Millisecond
	e, err := Open("", &Options{Store: s, SessionTimeout: session, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { s.open(); require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	for _, m := range []string{"a", "b"} {
		_, err = e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: m, Model: Clustering, Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
	}

	s.armed.Store(true)
	reset := make(chan error, 1)
	go func() { reset <- e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToLatest}) }()
	awaitHeld(t, ctx, s)
	var known int64
	for start := time.Now(); time.Since(start) < 3*session; {
		a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b", KnownVersion: known, Wait: session / 4})
		require.NoError(t, err)
		known = a.Version // the next one long-polls the frozen group
	}
	s.open()
	require.NoError(t, <-reset)
	// The silent member goes at a sweep; b, heartbeating on, stays.
	require.Eventually(t, func() bool {
		_, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b"})
		if !assert.NoError(t, err, "b was expired") {
			return true
		}
		gi, err := e.Group(ctx, "g")
		return err == nil && len(gi.Members) == 1
	}, 10*time.Second, session/10)
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, gi.Members, 1)
	assert.Equal(t, "b", gi.Members[0].ID)
}

// TestGroupFreeze_AbandonedLockWaitLetsGo: a reader that waited for g.mu
// and read the group frozen instead (the next freeze came first) leaves
// behind a goroutine still waiting for g.mu; once it gets the lock it lets
// it go, so g.mu is free again and the goroutine ends.
func TestGroupFreeze_AbandonedLockWaitLetsGo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	g := &group{}
	g.mu.Lock() // a holder that has not frozen g yet
	read := make(chan bool)
	go func() {
		frozen := g.readLock()
		g.readUnlock(frozen)
		read <- frozen
	}()
	// The reader waits for g.mu (or the next freeze) once it registered
	// for the freeze's wake-up.
	require.Eventually(t, func() bool {
		g.fz.rw.Lock()
		defer g.fz.rw.Unlock()
		return g.fz.wake != nil
	}, 10*time.Second, time.Millisecond)
	g.freeze()
	assert.True(t, <-read, "the reader reads the frozen group")
	g.thaw()
	g.mu.Unlock()
	require.Eventually(t, func() bool {
		if !g.mu.TryLock() {
			return false
		}
		g.mu.Unlock()
		return true
	}, 10*time.Second, time.Millisecond, "the abandoned wait keeps g.mu")
}
