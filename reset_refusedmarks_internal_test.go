package equeue

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// refusingOffsetWrites is a store that, while armed, refuses the writes
// that store an offset of group g.
type refusingOffsetWrites struct {
	Store
	prefix []byte
	armed  atomic.Bool
}

var errRefusedWrite = errors.New("test: write refused")

func (s *refusingOffsetWrites) Write(b *store.Batch) error {
	if s.armed.Load() && len(b.Entries) == 0 {
		for _, op := range b.Meta {
			if bytes.HasPrefix(op.Key, s.prefix) {
				return errRefusedWrite
			}
		}
	}
	return s.Store.Write(b)
}

// A ResetOffsets whose write is refused moves nothing and deletes none of
// the send-back marks that answer while the offsets stay: those at or
// above the committed offset. More marks than its write has room for
// are deleted before it; those are the dead ones (below the committed
// offset), which answer for nothing either way. Before, the marks past
// the write's room went first, in offset order: the highest, live ones,
// were gone though the reset was refused, and a failure of their
// messages, delivered again, was sent back a second time.
func TestResetOffsets_RefusedWriteKeepsTheLiveMarks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := &refusingOffsetWrites{Store: store.NewMemory(), prefix: append(append(slices.Clone(keyOffsetPrefix), "g"...), 0)}
	e, err := Open("", &Options{Store: st, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()

	const marks, committed = markDeletesPerWrite + 8, 10
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	batch := make([]*Message, marks)
	for i := range batch {
		batch[i] = &Message{Body: []byte("x")}
	}
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: batch})
	require.NoError(t, err)
	ref := QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[QueueRef]int64{ref: committed}))
	g, err := e.groups.group("g")
	require.NoError(t, err)

	// Marks 0..marks-1: those below the committed offset are dead (a
	// commit's deletion of them after its write failed), the rest live.
	k := seedSentBackMarks(t, g, st.Store, ref, marks)

	st.armed.Store(true)
	err = e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest})
	require.ErrorIs(t, err, errRefusedWrite)
	st.armed.Store(false)

	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, gi.Queues, 1)
	assert.EqualValues(t, committed, gi.Queues[0].Committed, "the refused reset moved nothing")
	var gone []int64
	for o := int64(committed); o < marks; o++ {
		_, err := st.GetMeta(sentBackKey("g", k, o))
		g.sbMu.Lock()
		_, held := g.sentBack[k][o]
		g.sbMu.Unlock()
		if err != nil || !held {
			gone = append(gone, o)
		}
	}
	assert.Empty(t, gone, "no live mark was deleted by the refused reset")

	require.NoError(t, e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	for o := range int64(marks) {
		_, err := st.GetMeta(sentBackKey("g", k, o))
		require.ErrorIs(t, err, store.ErrNotFound, "the reset deleted mark %d", o)
	}
	g.sbMu.Lock()
	assert.Empty(t, g.sentBack[k])
	g.sbMu.Unlock()
}

// seedSentBackMarks gives group g's queue ref send-back marks at offsets
// 0..marks-1, in memory and in s (each marked dead: its message was sent
// back), and returns the queue's offset key; which of them are live
// depends on the group's committed offset.
func seedSentBackMarks(t *testing.T, g *group, s Store, ref QueueRef, marks int) offsetKey {
	t.Helper()
	k := offsetKey{q: ref}
	ops := make([]store.MetaOp, 0, marks)
	g.sbMu.Lock()
	if g.sentBack == nil {
		g.sentBack = map[offsetKey]map[int64]sentBackMark{}
	}
	g.sentBack[k] = map[int64]sentBackMark{}
	for o := range int64(marks) {
		m := sentBackMark{dead: true, attempts: 1}
		g.sentBack[k][o] = m
		ops = append(ops, store.MetaOp{Key: sentBackKey("g", k, o), Value: sentBackValue(m)})
	}
	g.sbMu.Unlock()
	require.NoError(t, s.Write(&store.Batch{Meta: ops}))
	return k
}
