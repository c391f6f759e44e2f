package equeue_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A grant from before a reopen is fenced off after it: with the default
// Options.EpochBase a reopened engine granted the same epochs again, so a
// member that kept its ID across the reopen (a remote client across the
// server's restart) committed, pulled and sent back under its old grant,
// and its commit moved the group's offset back.
func TestReopen_AGrantFromBeforeTheReopenIsFenced(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
		require.NoError(t, err)
	}
	join := &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Incarnation: "1"}
	old, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, old.Queues, 1)
	og := old.Queues[0]
	assert.Equal(t, int64(1), og.Epoch, "a fresh directory grants epoch 1 first")
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: og.Epoch})
	require.NoError(t, err)

	e = reopen()
	a, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	ng := a.Queues[0]
	assert.Greater(t, a.Epoch, old.Epoch, "the group's epoch rises across the reopen")
	assert.Greater(t, a.Version, old.Version, "the assignment version rises across the reopen")
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: ng.Epoch})
	require.NoError(t, err)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a",
		Offsets: []equeue.OffsetCommit{{Grant: ng, Offset: 3}}}))

	err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a",
		Offsets: []equeue.OffsetCommit{{Grant: og, Offset: 1}}})
	require.ErrorIs(t, err, equeue.ErrFenced, "a commit under the grant from before the reopen (epoch %d; now %d)", og.Epoch, ng.Epoch)
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 5, Group: "g", Member: "a", Epoch: og.Epoch})
	require.ErrorIs(t, err, equeue.ErrFenced, "a pull under the grant from before the reopen")
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "a", Grant: og, Offset: 3, Attempts: 1})
	require.ErrorIs(t, err, equeue.ErrFenced, "a send-back under the grant from before the reopen")

	offs, err := e.FetchOffsets(ctx, "g", "a", a.Queues)
	require.NoError(t, err)
	require.Equal(t, int64(3), offs[0].Offset, "the old grant moved nothing")

	// Epochs keep rising over further reopens, and a group deleted
	// before one does not bring them back down.
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
	e = reopen()
	b, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, b.Queues, 1)
	assert.Greater(t, b.Queues[0].Epoch, ng.Epoch)
	assert.Greater(t, b.Version, a.Version)
}

// A base so near the int64 limit that an open's epochs could wrap to
// negative ones is refused at Open rather than granting them.
func TestReopen_EpochBaseNearTheLimitIsRefused(t *testing.T) {
	_, err := equeue.Open("", &equeue.Options{InMemory: true, EpochBase: math.MaxInt64 - 10})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
	e, err := equeue.Open("", &equeue.Options{InMemory: true, EpochBase: math.MaxInt64 >> 1})
	require.NoError(t, err)
	require.NoError(t, e.Close())
}

// A store that holds groups but no epoch floor, as an earlier version
// left it (here a group CommitGroupOffsets made, which writes no floor),
// starts the groups of its next open above every epoch that version could
// have granted.
func TestReopen_AStoreWithGroupsButNoFloorStartsAboveThem(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 0}))
	e = reopen()
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	assert.Greater(t, a.Queues[0].Epoch, int64(1<<32))
}
