package equeue_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// markDamage is how a test damages one mark: its value cannot be read
// back (damagedMeta), or it is garbled (a value no engine writes, put in
// its place).
var markDamage = []string{"unreadable", "garbled"}

// isMarkAt reports whether k is a mark key under prefix (of group g) that
// ends in offset off, as send-back and redriven marks do.
func isMarkAt(k []byte, prefix string, off int64) bool {
	return bytes.HasPrefix(k, []byte(prefix)) && len(k) >= len(prefix)+8 &&
		binary.BigEndian.Uint64(k[len(k)-8:]) == uint64(off)
}

// damageMark damages, in mem, the mark under prefix at offset off as how
// says, and returns the store to open.
func damageMark(t *testing.T, mem *store.Memory, how, prefix string, off int64) equeue.Store {
	t.Helper()
	if how == "garbled" {
		var key []byte
		require.NoError(t, mem.ScanMeta([]byte(prefix), func(k, _ []byte) error {
			if isMarkAt(k, prefix, off) {
				key = bytes.Clone(k)
			}
			return nil
		}))
		require.NotNil(t, key, "the mark at %d is stored", off)
		require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: key, Value: []byte{0}}}}))
		return keepOpen{mem}
	}
	return &damagedMeta{Store: keepOpen{mem}, damaged: func(k []byte) error {
		if isMarkAt(k, prefix, off) {
			return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
		}
		return nil
	}}
}

// A send-back mark whose value the store cannot read back, or that is
// garbled, made Open fail for ever (found by review: the marks were read
// with the plain scan, and a garbled one was ErrCorrupt). Open now drops
// it, counted in Stats().CorruptRecords and logged: the engine opens, the
// other marks still answer, and the message of the lost one is sent back
// again if it fails again.
func TestOpen_DropsALostSendBackMark(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
			require.NoError(t, err)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b", "c")})
			require.NoError(t, err)
			g, res := joinAndPull(t, e, "g", "m", "t")
			require.Len(t, res.Messages, 3)
			for _, off := range []int64{0, 1} {
				_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, DeadLetter: true})
				require.NoError(t, err)
			}
			require.NoError(t, e.Close())

			e, err = equeue.Open("", &equeue.Options{Store: damageMark(t, mem, how, "sbk/g\x00", 0)})
			require.NoError(t, err, "a lost send-back mark does not keep the engine from opening")
			defer func() { require.NoError(t, e.Close()) }()
			assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the lost mark is counted")
			var left []int64
			require.NoError(t, mem.ScanMeta([]byte("sbk/g\x00"), func(k, _ []byte) error {
				left = append(left, int64(binary.BigEndian.Uint64(k[len(k)-8:])))
				return nil
			}))
			assert.Equal(t, []int64{1}, left, "the lost mark is deleted, so a later open does not meet it again")

			g, _ = joinAndPull(t, e, "g", "m", "t")
			sb, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 1, DeadLetter: true})
			require.NoError(t, err)
			assert.True(t, sb.Duplicate, "the sound mark still answers")
			sb, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
			require.NoError(t, err)
			assert.False(t, sb.Duplicate, "the lost mark's message is sent back again")
			dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			assert.Len(t, dl, 3)
			assert.Equal(t, uint64(1), e.Stats().CorruptRecords)
		})
	}
}

// redrivenFixture stores in mem three dead letters of group g (dead-letter
// offsets 0 to 2, of messages "a" to "c" of topic t), the first redriven
// to t.
func redrivenFixture(t *testing.T, mem *store.Memory) {
	t.Helper()
	ctx := ctxT(t)
	e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b", "c")})
	require.NoError(t, err)
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, 3)
	for off := range int64(3) {
		_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, DeadLetter: true})
		require.NoError(t, err)
	}
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 3}}}))
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// A redriven mark whose value the store cannot read back, or that is
// garbled, failed ListDeadLetters and so every Redrive of its group for
// ever (found by review: the mark was read as it was, and a garbled one
// was ErrCorrupt). Its key still says that its dead letter was redriven,
// though not into which incarnation of the dead-letter topic: it is taken
// as redriven (as a mark of the first format is), so no dead letter is
// sent back twice, and counted once in Stats().CorruptRecords.
func TestRedrive_LostRedrivenMarkCountsAsRedriven(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			e := openWithLostRedrivenMark(t, mem, how)

			redriven := func() []bool {
				t.Helper()
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err, "a lost redriven mark does not fail the listing")
				var out []bool
				for _, d := range dl {
					out = append(out, d.Redriven)
				}
				return out
			}
			assert.Equal(t, []bool{true, false, false}, redriven())
			assert.Equal(t, []bool{true, false, false}, redriven())
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 2, n, "the others are redriven, the lost mark's dead letter not again")
			assert.Equal(t, []bool{true, true, true}, redriven())
			assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the lost mark is counted once")
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(6), info.Queues[0].MaxOffset, "three messages and a redriven copy of each, the first one's before the damage")
		})
	}
}

// A trim of the dead-letter topic deletes the redriven marks of the dead
// letters it deleted; one whose value the store cannot read back, or that
// is garbled, stayed for ever (found by review: the trim's scan failed on
// it, leaving every mark of the group, or passed over it).
func TestRetention_TrimDeletesALostRedrivenMark(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			e := openWithLostRedrivenMark(t, mem, how)
			redriveOne(t, e, 1)
			require.Equal(t, 2, metaKeys(t, mem, "dlqr/"))

			_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
			require.NoError(t, err)
			info, err := e.Topic(ctx, equeue.DLQTopic("g"))
			require.NoError(t, err)
			require.Equal(t, int64(3), info.Queues[0].MinOffset, "the dead letters are trimmed")
			assert.Zero(t, metaKeys(t, mem, "dlqr/"), "their marks are deleted, the lost one too")
		})
	}
}

// openWithLostRedrivenMark opens an engine on redrivenFixture's store in
// mem whose first redriven mark of group g is lost as how says; it is
// closed at the test's end.
func openWithLostRedrivenMark(t *testing.T, mem *store.Memory, how string) *equeue.Engine {
	t.Helper()
	redrivenFixture(t, mem)
	e, err := equeue.Open("", &equeue.Options{Store: damageMark(t, mem, how, "dlqr/g\x00", 0), Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// redriveOne redrives group g's dead letter at offset to its topic.
func redriveOne(t *testing.T, e *equeue.Engine, offset int64) {
	t.Helper()
	n, err := e.Redrive(ctxT(t), "g", equeue.RedriveRequest{Offsets: []int64{offset}, ToTopic: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// Deleting the dead-letter topic deletes its redriven marks; a lost one
// (unreadable or garbled) stayed (found by review: the scan failed on an
// unreadable one, leaving every mark of the group, and passed over a
// garbled one), though it answers for that topic as a mark of the first
// format does.
func TestDeleteTopic_DeletesALostRedrivenMark(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			e := openWithLostRedrivenMark(t, mem, how)
			redriveOne(t, e, 1)

			require.NoError(t, e.DeleteTopic(ctx, equeue.DLQTopic("g")))
			assert.Zero(t, metaKeys(t, mem, "dlqr/"), "the topic's marks are deleted, the lost one too")
		})
	}
}

// Open keeps a dead-letter topic from ending below a redriven mark (a
// later dead letter stored at its offset would be listed as redriven);
// a lost mark still proves its offset was given out (found by review: an
// unreadable one stopped the scan of the marks, a garbled one proved
// nothing, so later dead letters got the marked offsets).
func TestOpen_LostRedrivenMarkStillKeepsTheDeadLetterEnd(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			redrivenFixture(t, mem)
			e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{2}, ToTopic: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			dlq, err := e.Topic(ctx, equeue.DLQTopic("g"))
			require.NoError(t, err)
			require.NoError(t, e.Close())
			require.NoError(t, mem.DeleteRange(store.QueueID{Topic: dlq.ID, Queue: 0}, 0, 3)) // damage took the dead letters

			e, err = equeue.Open("", &equeue.Options{Store: damageMark(t, mem, how, "dlqr/g\x00", 2), Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			dlq, err = e.Topic(ctx, equeue.DLQTopic("g"))
			require.NoError(t, err)
			assert.Equal(t, int64(3), dlq.Queues[0].MaxOffset, "the lost mark at 2 proves the end")
			assert.Equal(t, uint64(3+1), e.Stats().CorruptRecords, "the three lost offsets and the lost mark")
		})
	}
}

// Open gives the redriven marks of the first format their topic; an
// unreadable mark made it give up on all of them (found by review: its
// scan failed on it).
func TestOpen_MigratesRedrivenMarksPastALostOne(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	redrivenFixture(t, mem)
	var key []byte
	require.NoError(t, mem.ScanMeta([]byte("dlqr/g\x00"), func(k, _ []byte) error {
		key = bytes.Clone(k)
		return nil
	}))
	binary.BigEndian.PutUint64(key[len(key)-8:], 1)
	require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: key, Value: []byte{1}}}})) // dead letter 1, first format

	e, err := equeue.Open("", &equeue.Options{Store: damageMark(t, mem, "unreadable", "dlqr/g\x00", 0), Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	v, err := mem.GetMeta(key)
	require.NoError(t, err)
	assert.Len(t, v, 5, "the mark of the first format names its topic")
	dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dl, 3)
	assert.True(t, dl[1].Redriven)
}
