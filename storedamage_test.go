package equeue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/crashsim"
	"github.com/equeue-go/equeue/store"
)

// A crash of the machine may keep a record's key in Badger while losing its
// bytes in the value log (records of ValueThreshold bytes or more are kept
// there). The engine still opens, delivers every record it can read back
// and reports the lost ones as corrupt, as it does for a record that fails
// its checksum, instead of failing every pull of the queue.
func TestEngine_RecordsLostFromTheValueLogAreReportedCorrupt(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const n = 60
	sendLargeAndClose(t, dir, "big", n, 0)

	cutValueLogTail(t, dir, n*2000, 10*2100)

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err, "the engine opens")
	defer func() { require.NoError(t, e.Close()) }()
	var got, corrupt []int64
	for off := int64(0); ; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "big", Queue: 0, Offset: off, Max: 16})
		require.NoError(t, err, "a pull over lost records")
		for _, m := range res.Messages {
			require.Equal(t, fmt.Sprintf("%04d %02000d", m.Offset, m.Offset), string(m.Body), "a delivered record is the one sent")
			got = append(got, m.Offset)
		}
		corrupt = append(corrupt, res.Corrupt...)
		if res.NextOffset == off {
			break
		}
		off = res.NextOffset
	}
	require.NotEmpty(t, corrupt, "the lost records are reported")
	require.GreaterOrEqual(t, len(got), n-12, "the records before the cut are delivered")
	require.Equal(t, int64(0), got[0])
	for i, off := range got {
		require.Equal(t, int64(i), off, "delivered from the start, in order, up to the lost tail")
	}
	require.Greater(t, e.Stats().CorruptRecords, uint64(0))
}

// One flipped byte in an early entry of the last value-log file (where
// segments go when SegmentBytes is above Badger's value threshold, as on
// cluster nodes) makes Badger cut the file there when it opens: the
// messages after it are lost although their sends succeeded under
// SyncAlways. The engine reports each of them corrupt, and gives none of
// their offsets to a later send (found by review: the queue ended one past
// the first offset of its last segment, the next send was stored at an
// offset a sent message had had, and a group committed past it skipped it).
func TestEngine_ValueLogCutAtOpenReusesNoOffset(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	opts := func() *equeue.Options {
		return &equeue.Options{Sync: equeue.SyncAlways, Badger: &store.BadgerOptions{SegmentBytes: 16 << 10}}
	}
	body := func(i int) []byte { return fmt.Appendf(nil, "msg-%04d %0200d", i, i) }
	ref := equeue.QueueRef{Topic: "t", Queue: 0}

	e, err := equeue.Open(dir, opts())
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	for b := range 3 { // three segments of ten messages
		var msgs []*equeue.Message
		for i := b * 10; i < b*10+10; i++ {
			msgs = append(msgs, &equeue.Message{Topic: "t", Body: body(i)})
		}
		res, err := p.SendBatch(ctx, msgs)
		require.NoError(t, err)
		require.Equal(t, int64(b*10), res.FirstOffset)
	}
	require.NoError(t, p.Close())
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 25}))
	require.NoError(t, e.Close())

	crashsim.FlipInLastValueLog(t, dir, body(12)) // in the second segment

	e, err = equeue.Open(dir, opts())
	require.NoError(t, err, "the engine opens")
	defer func() { require.NoError(t, e.Close()) }()
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(30), info.Queues[0].MaxOffset, "the queue ends where the sends left it")
	p, err = equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	res, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("after")})
	require.NoError(t, err)
	require.Equal(t, int64(30), res.Offset, "a later send gets a new offset")

	pullAll := func(from int64) (got map[int64]string, corrupt []int64) {
		got = make(map[int64]string)
		for off := from; ; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: off, Max: 16})
			require.NoError(t, err)
			for _, m := range res.Messages {
				got[m.Offset] = string(m.Body)
			}
			corrupt = append(corrupt, res.Corrupt...)
			if res.NextOffset == off {
				return got, corrupt
			}
			off = res.NextOffset
		}
	}
	got, corrupt := pullAll(0)
	want := map[int64]string{30: "after"}
	for i := range 10 {
		want[int64(i)] = string(body(i))
	}
	var lost []int64
	for off := int64(10); off < 30; off++ {
		lost = append(lost, off)
	}
	assert.Equal(t, want, got, "the sound messages, and the later send")
	assert.Equal(t, lost, corrupt, "every lost message is reported")
	assert.Equal(t, uint64(20), e.Stats().CorruptRecords)

	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	got, _ = pullAll(offs[ref])
	assert.Equal(t, map[int64]string{30: "after"}, got, "a group committed into the lost messages gets the later send")
}

// cutValueLogTail cuts cut bytes off the largest value-log file in dir
// (crashsim.CutValueLogTail).
func cutValueLogTail(t *testing.T, dir string, atLeast, cut int) {
	t.Helper()
	crashsim.CutValueLogTail(t, dir, int64(atLeast), int64(cut))
}

// Delayed messages whose bytes a machine crash lost: once due, the intact
// ones are delivered in order and the lost ones reported corrupt; the
// scheduler neither stops nor delivers a message twice.
func TestEngine_DelayedRecordsLostFromTheValueLogAreReportedCorrupt(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const n = 20
	sendLargeAndClose(t, dir, "later", n, 300*time.Millisecond)
	cutValueLogTail(t, dir, n*2000, 5*2100)

	e, err := equeue.Open(dir, nil)
	require.NoError(t, err, "the engine opens")
	defer func() { require.NoError(t, e.Close()) }()
	var got []string
	var corrupt []int64
	off := int64(0)
	deadline := time.Now().Add(20 * time.Second)
	for len(got)+len(corrupt) < n {
		require.True(t, time.Now().Before(deadline), "due messages never all came: %d delivered, %d corrupt", len(got), len(corrupt))
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "later", Queue: 0, Offset: off, Max: 64, Wait: 200 * time.Millisecond})
		require.NoError(t, err, "a pull over lost delayed messages")
		for _, m := range res.Messages {
			got = append(got, string(m.Body))
		}
		corrupt = append(corrupt, res.Corrupt...)
		off = res.NextOffset
	}
	require.Len(t, got, n-len(corrupt), "each delayed message delivered once or reported lost")
	require.NotEmpty(t, corrupt, "the lost ones are reported")
	require.Greater(t, len(got), n/2)
	for i, body := range got {
		require.Equal(t, fmt.Sprintf("%04d %02000d", i, i), body, "intact messages in order, none twice")
	}
}

// sendLargeAndClose opens an engine on dir (SyncNever), sends n messages of
// about 2 KiB to a new one-queue topic, message i's body starting with i
// as four digits, each delayed by delay, and closes the engine.
func sendLargeAndClose(t *testing.T, dir, topic string, n int, delay time.Duration) {
	t.Helper()
	ctx := context.Background()
	e, err := equeue.Open(dir, &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, topic, 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: topic, Delay: delay, Body: fmt.Appendf(nil, "%04d %02000d", i, i)})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	require.NoError(t, e.Close())
}

// A dedup group holding one ID long enough to reach the value threshold is
// kept in Badger's value log; a machine crash may lose its bytes while its
// key survives. The engine still opens: the lost group's IDs are forgotten
// (as the records lost with them are reported corrupt), every other ID is
// still answered as a duplicate, and the lost group is deleted, so later
// opens do not meet it again (found by review: Open failed for good).
func TestDedup_GroupLostFromTheValueLogIsForgotten(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	send := func(e *equeue.Engine, id string) equeue.AppendResult {
		res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: id, Body: []byte("x")}}})
		require.NoError(t, err)
		return res
	}
	short := []string{"s-1", "s-2", "s-3"}
	for _, id := range short {
		send(e, id)
	}
	long := func(i int) string { return fmt.Sprintf("%01500d", i) }
	const n = 20
	for i := range n {
		send(e, long(i))
	}
	require.NoError(t, e.Close())

	cutValueLogTail(t, dir, n*3000, 3300) // the last send's record and group

	for round := range 2 {
		e, err = equeue.Open(dir, nil)
		require.NoError(t, err, "the engine opens")
		if round == 0 {
			assert.Positive(t, e.Stats().LostDedupGroups, "the lost group is counted")
		} else {
			assert.Zero(t, e.Stats().LostDedupGroups, "deleted at the first open: not lost again")
		}
		for _, id := range short {
			assert.True(t, send(e, id).Duplicate, id)
		}
		for i := range 10 {
			assert.True(t, send(e, long(i)).Duplicate, "long ID %d", i)
		}
		require.NoError(t, e.Close())
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.False(t, send(e, long(n-1)).Duplicate, "the lost group's ID is stored again")
	assert.True(t, send(e, long(n-1)).Duplicate, "and then deduplicated")
}

// A group's metadata of ValueThreshold bytes or more (here: a long filter)
// is kept in Badger's value log; a machine crash may lose its bytes while
// its key survives. The engine still opens (found by review: Open failed
// with "load groups" for good): the group keeps its committed offsets, its
// next member stores the configuration again, and DeleteGroup deletes it.
func TestGroup_MetadataLostFromTheValueLogIsStoredAgain(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{ref: 0}))
	tags := make([]string, 150)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag%04d", i)
	}
	join := &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: strings.Join(tags, " || ")}}}
	_, err = e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.NoError(t, e.Close())

	cutValueLogTail(t, dir, 1000, 200) // the group's metadata

	for range 2 {
		e, err = equeue.Open(dir, nil)
		require.NoError(t, err, "the engine opens")
		offs, err := e.GroupOffsets(ctx, "g")
		require.NoError(t, err)
		assert.Equal(t, map[equeue.QueueRef]int64{ref: 0}, offs, "the group's offsets stay")
		info, err := e.Group(ctx, "g")
		require.NoError(t, err)
		assert.NotEmpty(t, info.Subscriptions, "the group consumes what it has offsets of (retention waits for it)")
		_, err = e.JoinGroup(ctx, join)
		require.NoError(t, err, "a member joins again")
		require.NoError(t, e.Close())
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
}

// A committed offset carrying many attempts (orderly and broadcasting
// consumers store them with the offset) reaches ValueThreshold and is kept
// in Badger's value log; a machine crash may lose its bytes while its key
// survives. The engine still opens (found by review: Open failed with
// "load groups" for good): the lost offset reads as the queue's start, so
// its messages are delivered again rather than skipped, and DeleteGroup,
// which lists the offsets, deletes the group.
func TestGroup_OffsetLostFromTheValueLogStartsOver(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const n = 100
	for i := range n {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
		require.NoError(t, err)
	}
	join := &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}}
	a, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	atts := make([]equeue.MessageAttempts, n-10)
	for i := range atts {
		atts[i] = equeue.MessageAttempts{Offset: int64(10 + i), Attempts: 1}
	}
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 10, Attempts: atts}}}))
	require.NoError(t, e.Close())

	cutValueLogTail(t, dir, 1000, 200) // the committed offset

	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	for range 2 {
		e, err = equeue.Open(dir, nil)
		require.NoError(t, err, "the engine opens")
		offs, err := e.GroupOffsets(ctx, "g")
		require.NoError(t, err)
		assert.Equal(t, map[equeue.QueueRef]int64{ref: 0}, offs, "the lost offset starts over, nothing is skipped")
		require.NoError(t, e.Close())
	}
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
}
