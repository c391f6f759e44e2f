package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// committedOf returns the offset group committed for member (a
// broadcasting group's row of it) on its single queue, -1 for none.
func committedOf(t *testing.T, e *equeue.Engine, group, member string) int64 {
	t.Helper()
	gi, err := e.Group(ctxT(t), group)
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Owner == member {
			return q.Committed
		}
	}
	return -1
}

// A broadcasting consumer whose CloseContext was cut before its final
// commit, and whose member then expired, has nothing left for
// Engine.Close to do: another incarnation of its member ID joined since,
// and consumed and committed further. Engine.Close committed the cut
// close's positions again over that incarnation's, moving the member's
// offset back (or, the new incarnation gone first, failed the commit as
// not a member's and reported it).
func TestEngineClose_RedoesNoCutCloseOfAMemberThatExpired(t *testing.T) {
	dir := t.TempDir()
	opts := &equeue.Options{SessionTimeout: time.Second}
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
	handled := map[string]int{}
	seen := func(who string) int { mu.Lock(); defer mu.Unlock(); return handled[who] }
	consumer := func(who string, commitEvery time.Duration) *equeue.Consumer {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond, CommitInterval: commitEvery,
			Handler: func(context.Context, *equeue.Message) error {
				mu.Lock()
				defer mu.Unlock()
				handled[who]++
				return nil
			}})
		require.NoError(t, err)
		return c
	}
	old := consumer("old", time.Hour)
	require.NoError(t, old.Start(ctx))
	eventually(t, waitLong, func() bool { return seen("old") == 3 }, "the old incarnation handled the messages")
	cut, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, old.CloseContext(cut), context.Canceled, "its final commit and leave are cut")
	require.Less(t, committedOf(t, e, "g", "a"), int64(3), "what it handled is not committed")

	// Once the old member's session expired, a new incarnation takes the ID.
	cur := consumer("new", 50*time.Millisecond)
	eventually(t, waitLong, func() bool {
		err := cur.Start(ctx)
		require.True(t, err == nil || errors.Is(err, equeue.ErrMemberIDInUse), "start: %v", err)
		return err == nil
	}, "a new incarnation joins once the old one expired")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("4", "5")})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return committedOf(t, e, "g", "a") == 5 }, "the new incarnation committed all")

	closed = true
	require.NoError(t, e.Close(), "nothing of the expired member's cut close is done again")
	e2, err := equeue.Open(dir, opts)
	require.NoError(t, err)
	defer func() { assert.NoError(t, e2.Close()) }()
	assert.Equal(t, int64(5), committedOf(t, e2, "g", "a"), "the member's offset stayed where the new incarnation committed it")
}
