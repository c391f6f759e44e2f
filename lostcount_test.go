package equeue_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// A queue whose end Open raised past lost offsets holds fewer messages
// than its offsets span: a topic's MaxMessages counts what it stores, so
// a rejecting limit of 10 takes sends to a topic holding 2, and retention
// does not leave it refusing them for good.
func TestEngine_LostOffsetsDoNotCountAgainstMaxMessages(t *testing.T) {
	ctx := ctxT(t)
	_, _, e := openOverLostTail(t)
	defer func() { require.NoError(t, e.Close()) }()
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Messages, "the lost offsets hold no message")
	assert.Equal(t, int64(2), info.Queues[0].Messages, "nor does the queue count them")
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 10, Overflow: equeue.OverflowReject}))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	assert.NoError(t, err, "the topic stores 2 messages of its 10")

	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
	require.NoError(t, err)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after retention")}}})
	assert.NoError(t, err, "retention deleted every message")
}

// Age-based retention moves a queue's first offset over the lost offsets
// at its end once every message below them is due: none of them ever
// comes due to move it, and a watermark left at their start would count
// them as held for good.
func TestEngine_RetentionPassesLostTail(t *testing.T) {
	ctx := ctxT(t)
	_, _, e := openOverLostTail(t)
	defer func() { require.NoError(t, e.Close()) }()
	_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(20), info.Queues[0].MinOffset, "the watermark passed the lost offsets")
	assert.Equal(t, int64(0), info.Messages)
}

// Under OverflowDropOldest a topic with lost offsets is trimmed by the
// messages it stores: a limit of 4 keeps its 2 stored messages and 2 new
// ones, and the next send cuts only the oldest stored message.
func TestEngine_LostOffsetsDropOldestCutsOnlyWhatIsOver(t *testing.T) {
	ctx := ctxT(t)
	_, _, e := openOverLostTail(t)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 4, Overflow: equeue.OverflowDropOldest}))
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "a-%d", i)}}})
		require.NoError(t, err)
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Queues[0].MinOffset, "only m-0 was over the limit")
	assert.Equal(t, int64(4), info.Messages)
	got, _, _ := browseAll(t, e, "t", info.Queues[0].MinOffset)
	assert.Equal(t, map[int64]string{1: "m-1", 20: "a-0", 21: "a-1", 22: "a-2"}, got)

	// Two more sends cut m-1 and, past the lost offsets, a-0.
	for i := 3; i < 5; i++ {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "a-%d", i)}}})
		require.NoError(t, err)
	}
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(21), info.Queues[0].MinOffset)
	assert.Equal(t, int64(4), info.Messages)
}

// Once sends went on past lost offsets, a restart no longer finds them at
// the queue's end; when their stored range is gone too (an engine before
// ranges were stored, or its key unreadable), a retention pass that reads
// over them notes them, so the topic's count (and a rejecting MaxMessages)
// leaves them out.
func TestEngine_RetentionNotesLostOffsetsAfterRestart(t *testing.T) {
	ctx := ctxT(t)
	dir, _, e := openOverLostTail(t)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("past")}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	deleteLostKeys(t, dir)

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 10, Overflow: equeue.OverflowReject}))
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.Deleted, "nothing is due")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), info.Messages, "m-0, m-1 and past")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	assert.NoError(t, err, "the topic stores 3 messages of its 10")
}

// A group's lag counts the messages a queue holds past its offset, not
// the offsets lost to damage between: a group that committed below the
// lost offsets has only the messages stored past them left to consume,
// and so does a group that has no offset yet and starts from the first.
func TestEngine_GroupLagLeavesOutLostOffsets(t *testing.T) {
	ctx := ctxT(t)
	_, _, e := openOverLostTail(t)
	defer func() { require.NoError(t, e.Close()) }()
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "a-%d", i)}}})
		require.NoError(t, err)
	}
	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "below", map[equeue.QueueRef]int64{ref: 1}))

	lag := func(group string) int64 {
		t.Helper()
		gi, err := e.Group(ctx, group)
		require.NoError(t, err)
		return gi.TotalLag()
	}
	assert.Equal(t, int64(1+3), lag("below"), "m-1 and the three sent past the lost offsets")
	assert.Equal(t, int64(3), lag("g"), "g committed past the lost offsets")

	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "fresh", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest})
	require.NoError(t, err)
	assert.Equal(t, int64(2+3), lag("fresh"), "m-0, m-1 and the three sent past the lost offsets")
}

// A size-triggered retention pass cuts the oldest tenth of the messages a
// queue stores, not of its offsets: with 18 of 100 offsets lost, it cuts 8
// messages (m-0, m-1 and, past the lost offsets, six more), where a tenth
// of the offsets would have reached only into the lost ones and cut 2.
func TestEngine_SizeRetentionCutsATenthOfTheStoredMessages(t *testing.T) {
	ctx := ctxT(t)
	_, _, e := openOverLostTail(t)
	defer func() { require.NoError(t, e.Close()) }()
	for i := range 80 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "a-%d", i)}}})
		require.NoError(t, err)
	}
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1, MaxBytes: 1})
	require.NoError(t, err)
	assert.Equal(t, int64(8), res.Deleted, "a tenth of the 82 stored messages")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(26), info.Queues[0].MinOffset, "m-0, m-1 and a-0 to a-5 cut")
	assert.Equal(t, int64(74), info.Messages)
}

// Once sends went on past lost offsets, a restart no longer finds them at
// the queue's end: the range Open raised the end over was stored, so
// later opens still leave it out of the topic's and the queue's counts, a
// group's lag and a rejecting MaxMessages. Retention that passes the range
// leaves nothing of it behind across a reopen.
func TestEngine_LostOffsetsStayLeftOutAfterSendsPastThem(t *testing.T) {
	ctx := ctxT(t)
	dir, _, e := openOverLostTail(t)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("past")}}})
	require.NoError(t, err)
	require.NoError(t, e.CommitGroupOffsets(ctx, "below", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 1}))
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), info.Messages, "m-0, m-1 and past")
	assert.Equal(t, int64(3), info.Queues[0].Messages)
	gi, err := e.Group(ctx, "below")
	require.NoError(t, err)
	assert.Equal(t, int64(2), gi.TotalLag(), "m-1 and past")
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 4, Overflow: equeue.OverflowReject}))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("fourth")}}})
	assert.NoError(t, err, "the topic stores 3 messages of its 4")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("fifth")}}})
	assert.ErrorIs(t, err, equeue.ErrTopicFull, "and now 4")
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{}))

	// Retention passes the range; the next open drops its key.
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.Len(t, lostKeys(t, dir), 1, "the range is stored until an open finds it passed")

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(22), info.Queues[0].MinOffset, "retention deleted every message")
	assert.Equal(t, int64(22), info.Queues[0].MaxOffset)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("new")}}})
	require.NoError(t, err)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Messages)
	require.NoError(t, e.Close())
	assert.Empty(t, lostKeys(t, dir), "no range the watermark passed is kept")
}

// A range stored at one open proves at the next that its offsets were
// given out, though nothing else does any more (the group that committed
// past them was deleted): they are not given out again.
func TestEngine_StoredLostRangeReusesNoOffset(t *testing.T) {
	ctx := ctxT(t)
	dir, _, e := openOverLostTail(t)
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))
	require.NoError(t, e.Close())

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	require.NoError(t, err)
	assert.Equal(t, int64(20), res.FirstOffset)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), info.Messages)
}

// A second loss after sends went past the first leaves a queue two lost
// ranges: a later open keeps both out of the counts.
func TestEngine_TwoLostRangesStayLeftOut(t *testing.T) {
	ctx := ctxT(t)
	dir, q, e := openOverLostTail(t)
	for i := range 10 { // 20 to 29
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "a-%d", i)}}})
		require.NoError(t, err)
	}
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 30}))
	require.NoError(t, e.Close())
	loseTail(t, dir, q, 25, 30)

	// The open that finds the second loss, then one after a send past it.
	for i := range int64(2) {
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, 2+5+i, info.Messages, "m-0, m-1, a-0 to a-4 and the sends past")
		assert.Equal(t, 2+5+i, info.Queues[0].Messages)
		_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("past")}}})
		require.NoError(t, err)
		require.NoError(t, e.Close())
	}
}

// openOverLostTail sends 20 messages to a new one-queue topic "t" (bodies
// "m-0" to "m-19", group "g" committed to 20), loses offsets 2 to 19 from
// the store, as damage that takes a queue's tail does, and opens the
// engine over it: m-0 and m-1 remain, and Open raises the queue's end past
// the lost offsets. It returns the engine's directory, the topic's store
// queue and the engine, which the caller closes.
func openOverLostTail(t *testing.T) (string, store.QueueID, *equeue.Engine) {
	t.Helper()
	dir := t.TempDir()
	q := sendNAndClose(t, dir, "t", 20, 20)
	loseTail(t, dir, q, 2, 20)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	return dir, q, e
}

// lostKeys returns the lost-range keys stored in dir.
func lostKeys(t *testing.T, dir string) [][]byte {
	t.Helper()
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var keys [][]byte
	require.NoError(t, st.ScanMeta(equeue.LostKeyPrefix, func(k, _ []byte) error {
		keys = append(keys, slices.Clone(k))
		return nil
	}))
	return keys
}

// deleteLostKeys deletes the lost-range keys stored in dir.
func deleteLostKeys(t *testing.T, dir string) {
	t.Helper()
	keys := lostKeys(t, dir)
	require.NotEmpty(t, keys)
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var ops []store.MetaOp
	for _, k := range keys {
		ops = append(ops, store.MetaOp{Key: k, Delete: true})
	}
	require.NoError(t, st.Write(&store.Batch{Meta: ops}))
}

// A topic's deletion deletes its queues' lost ranges with it.
func TestEngine_LostRangesAreDeletedWithTheirTopic(t *testing.T) {
	ctx := ctxT(t)
	dir, _, e := openOverLostTail(t)
	require.NoError(t, e.Close())
	require.Len(t, lostKeys(t, dir), 1, "the open stored the range")

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.Close())
	assert.Empty(t, lostKeys(t, dir))
}
