package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// sendNAndClose opens an engine on dir, sends n messages to a new one-queue
// topic (message i's body is "m-i"), lets group g commit commit of its
// queue, and closes the engine. It returns the topic's store queue.
func sendNAndClose(t *testing.T, dir, topic string, n int, commit int64) store.QueueID {
	t.Helper()
	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, topic, 1))
	for i := range n {
		res, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m-%d", i)}}})
		require.NoError(t, err)
		require.Equal(t, int64(i), res.FirstOffset)
	}
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: topic, Queue: 0}: commit}))
	info, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	require.NoError(t, e.Close())
	return store.QueueID{Topic: info.ID, Queue: 0}
}

// loseTail deletes q's records in [from, to) straight from the store in
// dir, as damage that takes a queue's tail (a lost tail of the LSM tree, an
// older backup restored) leaves it.
func loseTail(t *testing.T, dir string, q store.QueueID, from, to uint64) {
	t.Helper()
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	require.NoError(t, st.DeleteRange(q, from, to))
	_, next, ok, err := st.Bounds(q)
	require.NoError(t, err)
	if ok {
		require.Equal(t, from, next, "the store's end is below what was sent")
	}
	require.NoError(t, st.Close())
}

// browseAll reads topic's queue 0 from off until a pull makes no progress
// and returns the bodies read by offset, the corrupt offsets reported and
// where the reads stopped.
func browseAll(t *testing.T, e *equeue.Engine, topic string, off int64) (map[int64]string, []int64, int64) {
	t.Helper()
	got := map[int64]string{}
	var corrupt []int64
	for range 1000 {
		res, err := e.Pull(ctxT(t), &equeue.PullRequest{Topic: topic, Queue: 0, Offset: off, Max: 4})
		require.NoError(t, err)
		for _, m := range res.Messages {
			got[m.Offset] = string(m.Body)
		}
		corrupt = append(corrupt, res.Corrupt...)
		if res.NextOffset == off {
			return got, corrupt, off
		}
		off = res.NextOffset
	}
	t.Fatalf("pulls from %d never settled", off)
	return nil, nil, 0
}

// A store whose end of a queue came back below an offset a group committed
// (damage that took the queue's tail, an older backup restored) proves the
// offsets up to the commit were given out. Open keeps the queue's end at
// the commit, so a later send gets a new offset, which the group receives,
// instead of one the group committed past, which it would never see (found
// by review: the next send was stored at the store's end). The lost
// offsets are counted and skipped by reads.
func TestEngine_StoreEndBelowACommitReusesNoOffset(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  uint64 // the first offset lost
	}{
		{"tail lost", 6},
		{"every record lost", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx := ctxT(t)
			const n, commit = 10, 10
			ref := equeue.QueueRef{Topic: "t", Queue: 0}
			q := sendNAndClose(t, dir, "t", n, commit)
			loseTail(t, dir, q, tc.cut, n)

			e, err := equeue.Open(dir, nil)
			require.NoError(t, err, "the engine opens")
			defer func() { require.NoError(t, e.Close()) }()
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(commit), info.Queues[0].MaxOffset, "the queue ends at the group's commit")
			assert.Equal(t, uint64(n-tc.cut), e.Stats().CorruptRecords, "the lost offsets are counted")

			want := map[int64]string{}
			for i := range int64(tc.cut) {
				want[i] = fmt.Sprintf("m-%d", i)
			}
			got, corrupt, end := browseAll(t, e, "t", 0)
			assert.Equal(t, want, got, "the records left are read")
			assert.Empty(t, corrupt)
			assert.Equal(t, int64(commit), end, "reads pass the lost offsets")

			res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
			require.NoError(t, err)
			assert.Equal(t, int64(commit), res.FirstOffset, "a later send gets a new offset")

			offs, err := e.GroupOffsets(ctx, "g")
			require.NoError(t, err)
			got, _, _ = browseAll(t, e, "t", offs[ref])
			assert.Equal(t, map[int64]string{commit: "after"}, got, "the group gets the later send")
			want[commit] = "after"
			got, _, _ = browseAll(t, e, "t", 0)
			assert.Equal(t, want, got)
		})
	}
}

// A queue whose end Open raised past lost offsets and which got no send
// since: the next open raises it again, and a topic's byte limit and
// retention, which count and trim what is stored, work across the gap.
func TestEngine_StoreEndBelowACommitKeepsAcrossOpensAndTrims(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	q := sendNAndClose(t, dir, "t", 10, 8)
	loseTail(t, dir, q, 4, 10)

	for range 2 {
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		assert.Equal(t, int64(8), info.Queues[0].MaxOffset)
		require.NoError(t, e.Close())
	}

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 1 << 20}), "counting the bytes stored passes the gap")
	// Records of one-byte bodies take 22 bytes: two are over the limit,
	// and the second send trims the first, across the gap before it.
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 40, Overflow: equeue.OverflowDropOldest}))
	for i, body := range []string{"x", "y"} {
		res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}})
		require.NoError(t, err)
		assert.Equal(t, int64(8+i), res.FirstOffset)
	}
	got, _, end := browseAll(t, e, "t", 0)
	assert.Equal(t, map[int64]string{9: "y"}, got, "the limit trimmed the queue to its last message")
	assert.Equal(t, int64(10), end)

	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
	require.NoError(t, err)
	got, _, _ = browseAll(t, e, "t", 0)
	assert.Empty(t, got, "retention deleted every message")
}

// A send-back mark proves the offset of the message it was written for was
// given out, committed or not: a later send does not get it (the group's
// send-back of it would be answered as a duplicate).
func TestEngine_StoreEndBelowASendBackMarkReusesNoOffset(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	q := sendNAndClose(t, dir, "t", 10, 0)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	g, pulled := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, pulled.Messages, 10)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 8, Attempts: 1, DeadLetter: true})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	loseTail(t, dir, q, 6, 10)

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	require.NoError(t, err)
	assert.Equal(t, int64(9), res.FirstOffset, "a later send gets an offset past the marked one")
}

// A dedup entry proves the offset it holds was given out: after damage
// that took the queue's tail with the message, the window still answers a
// resend of its ID as a duplicate stored there, so a later send must not
// get that offset too (found by review: the next send was stored at the
// offset the resend was answered with, and a reader there got another
// message than the one the producer was told was stored).
func TestEngine_StoreEndBelowADedupEntryReusesNoOffset(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	const n = 6 // message i's ID is "id-i"; the last one's entry is at 5
	send := func(e *equeue.Engine, id, body string) equeue.AppendResult {
		t.Helper()
		res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: id, Body: []byte(body)}}})
		require.NoError(t, err)
		return res
	}

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	for i := range n {
		res := send(e, fmt.Sprintf("id-%d", i), fmt.Sprintf("m-%d", i))
		require.Equal(t, int64(i), res.FirstOffset)
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.NoError(t, e.Close())
	loseTail(t, dir, store.QueueID{Topic: info.ID, Queue: 0}, n-1, n) // the last message only

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err, "the engine opens")
	defer func() { require.NoError(t, e.Close()) }()
	again := send(e, "id-5", "m-5")
	require.True(t, again.Duplicate, "the window kept the ID")
	require.Equal(t, int64(n-1), again.FirstOffset, "the resend is answered with where the message was stored")

	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(n), info.Queues[0].MaxOffset, "the queue ends past the entry's offset")
	assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the lost offset is counted")

	after := send(e, "id-new", "after")
	assert.False(t, after.Duplicate)
	assert.GreaterOrEqual(t, after.FirstOffset, int64(n), "a later send gets an offset past the one the resend was answered with")
	got, corrupt, _ := browseAll(t, e, "t", 0)
	assert.Empty(t, corrupt)
	assert.NotEqual(t, "after", got[n-1], "a read at the deduplicated offset does not get the later send")
	assert.Equal(t, map[int64]string{0: "m-0", 1: "m-1", 2: "m-2", 3: "m-3", 4: "m-4", after.FirstOffset: "after"}, got)
}

// A dedup entry proves offsets of its own topic only: a topic deleted and
// created again under its name does not end at the former one's entries.
func TestEngine_DedupEntriesOfADeletedTopicRaiseNoEnd(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	opts := equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "t", opts))
	for i := range 6 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: fmt.Sprintf("old-%d", i)}}})
		require.NoError(t, err)
	}
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopicWith(ctx, "t", opts))
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "new-0"}}})
	require.NoError(t, err)
	require.Equal(t, int64(0), res.FirstOffset)
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Queues[0].MaxOffset)
	assert.Zero(t, e.Stats().CorruptRecords)
}
