package equeue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestGroup_LeaveFencedByIncarnation: once a restart (a new incarnation)
// took the member ID of an expired one, a leave in the old incarnation's
// name is refused with ErrNotMember and the new incarnation stays a member
// with its queues; a leave in the new incarnation's name removes it.
func TestGroup_LeaveFencedByIncarnation(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: 200 * time.Millisecond})
		require.NoError(t, e.CreateTopic(ctx, "t", 2))
		join := func(inc string) (equeue.Assignment, error) {
			return b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "w", Incarnation: inc,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		}
		_, err := join("old")
		require.NoError(t, err)
		// The old incarnation goes silent; the restart may take the ID once
		// the old session expired.
		var a equeue.Assignment
		eventually(t, 30*time.Second, func() bool {
			a, err = join("new")
			if errors.Is(err, equeue.ErrMemberIDInUse) {
				return false
			}
			require.NoError(t, err)
			return true
		}, "the new incarnation joins after the old one expired")
		require.Len(t, a.Queues, 2)

		err = b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "w", Incarnation: "old"})
		require.ErrorIs(t, err, equeue.ErrNotMember, "a replaced incarnation cannot leave")
		gi, err := e.Group(ctx, "g")
		require.NoError(t, err)
		require.Len(t, gi.Members, 1, "the new incarnation is still a member")
		hb, err := b.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "w", KnownVersion: -1, Incarnation: "new"})
		require.NoError(t, err)
		assert.Len(t, hb.Queues, 2, "and keeps its queues")

		require.NoError(t, b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "w", Incarnation: "new"}))
		gi, err = e.Group(ctx, "g")
		require.NoError(t, err)
		assert.Empty(t, gi.Members, "the live incarnation leaves")
	})
}
