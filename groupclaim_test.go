package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClaimGroup_RefusesNativeJoins: a name claimed for a group
// coordinated outside the engine (the Kafka listener's, while it has
// members) is refused to native joins with ErrGroupNameTaken, which make
// nothing, until the claim is released or lapses; a claim is refused
// while a native group has the name, members or not, until it is
// deleted. Through a namespace's view the name is the namespace's.
func TestClaimGroup_RefusesNativeJoins(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	join := func(b interface {
		JoinGroup(context.Context, *equeue.JoinRequest) (equeue.Assignment, error)
	}, group string) error {
		_, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		return err
	}

	require.ErrorIs(t, e.ClaimGroup(ctx, "bad name", time.Minute), equeue.ErrInvalidName)
	require.NoError(t, e.ClaimGroup(ctx, "k", time.Minute), "a name the engine does not know")
	require.ErrorIs(t, join(e, "k"), equeue.ErrGroupNameTaken)
	_, err := e.Group(ctx, "k")
	require.ErrorIs(t, err, equeue.ErrGroupNotFound, "the refused join made no group")
	require.NoError(t, e.ClaimGroup(ctx, "k", 0), "released")
	require.NoError(t, join(e, "k"))

	// A native group keeps its name, with members and without.
	require.ErrorIs(t, e.ClaimGroup(ctx, "k", time.Minute), equeue.ErrGroupNameTaken, "a native group with a member")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "k", Member: "m"}))
	require.ErrorIs(t, e.ClaimGroup(ctx, "k", time.Minute), equeue.ErrGroupNameTaken, "a native group without members")
	require.NoError(t, e.DeleteGroup(ctx, "k", equeue.DeleteGroupOptions{}))
	require.NoError(t, e.ClaimGroup(ctx, "k", time.Minute), "deleted")

	// A group that only has offsets committed from outside can be claimed.
	require.NoError(t, e.CommitGroupOffsets(ctx, "kafka", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}))
	require.NoError(t, e.ClaimGroup(ctx, "kafka", time.Minute))
	require.ErrorIs(t, join(e, "kafka"), equeue.ErrGroupNameTaken)

	// A claim not renewed lapses.
	require.NoError(t, e.ClaimGroup(ctx, "brief", time.Millisecond))
	eventually(t, 30*time.Second, func() bool { return join(e, "brief") == nil }, "the claim lapsed")

	// A namespace's view claims its own name.
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "t", 1))
	require.NoError(t, ns.ClaimGroup(ctx, "g", time.Minute))
	err = join(ns, "g")
	require.ErrorIs(t, err, equeue.ErrGroupNameTaken)
	require.NotContains(t, err.Error(), "tenant:", "errors name the group as the namespace does")
	require.NoError(t, join(e, "g"), "the engine's g is another group")
	require.NoError(t, ns.ClaimGroup(ctx, "g", 0))
	require.NoError(t, join(ns, "g"), "released")
}
