package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// TestGroupOffsets_CommitFetchReopen: offsets committed for a group with no
// native members are stored beside native groups', read back, listed by
// Group, and kept across a reopen.
func TestGroupOffsets_CommitFetchReopen(t *testing.T) {
	ctx := ctxT(t)
	f := newFaultRig(t, "badger", nil)
	e := f.E
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	none, err := e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Empty(t, none, "an unknown group has no offsets")
	q0, q1 := equeue.QueueRef{Topic: "t", Queue: 0}, equeue.QueueRef{Topic: "t", Queue: 1}
	appendTo(t, e, q0, 5)
	appendTo(t, e, q1, 7)
	require.NoError(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 3, q1: 7}))
	require.NoError(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 5}))
	got, err := e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{q0: 5, q1: 7}, got)
	gi, err := e.Group(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, "kg", gi.Name)
	require.Len(t, gi.Queues, 2, "the group's committed queues show with their progress")
	assert.Equal(t, q0, gi.Queues[0].QueueRef)
	assert.Equal(t, int64(5), gi.Queues[0].Committed)
	assert.Equal(t, int64(7), gi.Queues[1].Committed)

	e = f.reopen()
	got, err = e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{q0: 5, q1: 7}, got)

	// Deleting the topic drops its offsets.
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	got, err = e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Empty(t, got)
}

// TestGroupOffsets_Refused: bad names, offsets and queues, and groups with
// native members, are refused with their sentinel and store nothing.
func TestGroupOffsets_Refused(t *testing.T) {
	ctx := ctxT(t)
	f := newFaultRig(t, "memory", nil)
	e := f.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	q0 := equeue.QueueRef{Topic: "t", Queue: 0}
	appendTo(t, e, q0, 1)
	before := metaDump(t, f.FS)
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "bad name", map[equeue.QueueRef]int64{q0: 1}), equeue.ErrInvalidName)
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{q0: -1}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{q0: 2}), equeue.ErrInvalidArgument, "past the queue's end")
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "nope"}: 1}), equeue.ErrTopicNotFound)
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 4}: 1}), equeue.ErrQueueNotFound)
	assert.Equal(t, before, metaDump(t, f.FS))

	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "native", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	before = metaDump(t, f.FS)
	assert.ErrorIs(t, e.CommitGroupOffsets(ctx, "native", map[equeue.QueueRef]int64{q0: 1}), equeue.ErrFenced)
	assert.Equal(t, before, metaDump(t, f.FS), "a native group's offsets are its members' to commit")
}

// TestGroupOffsets_FailedWrite: a commit whose store write fails changes
// neither the store nor the engine's view (a new group does not appear); a
// failed sync leaves the offsets stored, reported as not known durable.
func TestGroupOffsets_FailedWrite(t *testing.T) {
	ctx := ctxT(t)
	f := newFaultRig(t, "memory", nil)
	e := f.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	q0 := equeue.QueueRef{Topic: "t", Queue: 0}
	appendTo(t, e, q0, 9)
	before := metaDump(t, f.FS)
	f.FS.FailWrites(1)
	require.ErrorIs(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 4}), faultstore.ErrInjected)
	assert.Equal(t, before, metaDump(t, f.FS))
	got, err := e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = e.Group(ctx, "kg")
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound, "the group a failed first commit would have created is gone")

	require.NoError(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 4}))
	f.FS.FailWrites(1)
	require.ErrorIs(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 9}), faultstore.ErrInjected)
	got, err = e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, int64(4), got[q0], "memory follows the store")

	f.FS.FailSyncs(1)
	err = e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 6})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	got, err = e.GroupOffsets(ctx, "kg")
	require.NoError(t, err)
	assert.Equal(t, int64(6), got[q0], "written, so shown, but reported as not known durable")
}

// TestGroupOffsets_ResetOffsetsMovesThem: ResetOffsets (CLI reset-offsets)
// moves the offsets of a group coordinated outside the engine, which has no
// subscriptions: the queues it holds offsets of, as Group lists them.
func TestGroupOffsets_ResetOffsetsMovesThem(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	q0, q1 := equeue.QueueRef{Topic: "t", Queue: 0}, equeue.QueueRef{Topic: "t", Queue: 1}
	for q := range 2 {
		for range 4 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{q0: 3, q1: 1}))

	offsets := func() map[equeue.QueueRef]int64 {
		got, err := e.GroupOffsets(ctx, "kg")
		require.NoError(t, err)
		return got
	}
	require.NoError(t, e.ResetOffsets(ctx, "kg", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	assert.Equal(t, map[equeue.QueueRef]int64{q0: 0, q1: 0}, offsets())
	require.NoError(t, e.ResetOffsets(ctx, "kg", equeue.ResetRequest{To: equeue.ResetToLatest}))
	assert.Equal(t, map[equeue.QueueRef]int64{q0: 4, q1: 4}, offsets())
	require.NoError(t, e.ResetOffsets(ctx, "kg", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{q1: 2}}))
	assert.Equal(t, map[equeue.QueueRef]int64{q0: 4, q1: 2}, offsets())
}
