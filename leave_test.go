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

// TestGroup_JoinAfterLeaveOfTheSameIncarnationIsRefused: a join of an
// incarnation that left its group (as a consumer's rejoin in flight when
// its Close left, reaching the engine late over a remote connection) is
// refused with ErrNotMember and adds no member, so the ID is not held
// until a session expires: a new incarnation joins at once, and the group
// can be deleted without Force once that one left too. Also when the leave
// found no group (a forced DeleteGroup had removed it) or no member.
func TestGroup_JoinAfterLeaveOfTheSameIncarnationIsRefused(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: time.Minute})
		require.NoError(t, e.CreateTopic(ctx, "t", 2))
		join := func(inc string) (equeue.Assignment, error) {
			return b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "w", Incarnation: inc,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		}
		leave := func(inc string) error {
			return b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "w", Incarnation: inc})
		}

		_, err := join("one")
		require.NoError(t, err)
		require.NoError(t, leave("one"))
		_, err = join("one")
		require.ErrorIs(t, err, equeue.ErrNotMember, "the incarnation that left joins again")
		assert.Empty(t, groupMembers(t, e, "g"), "the late join added the member")

		a, err := join("two")
		require.NoError(t, err, "a new incarnation of the ID joins at once")
		assert.Len(t, a.Queues, 2)
		require.NoError(t, leave("two"))
		require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), "the group has no member left")

		// The leave finds no group: a forced DeleteGroup removed it, and
		// the member's rejoin was still on its way.
		require.ErrorIs(t, leave("three"), equeue.ErrGroupNotFound)
		_, err = join("three")
		require.ErrorIs(t, err, equeue.ErrNotMember, "the incarnation that left joins the group made again")
		_, err = e.Group(ctx, "g")
		assert.ErrorIs(t, err, equeue.ErrGroupNotFound, "the refused join made the group again")
	})
}

// TestGroup_RemovedByForcedDeleteRejoinsWithItsIncarnation: a member that
// did not leave, but lost its group to a forced DeleteGroup (or its
// session), rejoins with its incarnation, as its consumer does.
func TestGroup_RemovedByForcedDeleteRejoinsWithItsIncarnation(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	join := func() error {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "w", Incarnation: "one",
			Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		return err
	}
	require.NoError(t, join())
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
	require.NoError(t, join(), "the removed member rejoins")
	assert.Equal(t, []string{"w"}, groupMembers(t, e, "g"))
}
