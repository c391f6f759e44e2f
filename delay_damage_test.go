package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// unreadableDelaySlot is a store whose delay log (queue 0 of topic 0)
// cannot read back the record at slot: a Read that reaches it fails with
// an error matching store.ErrDamaged, as a store does for bytes it holds
// but cannot read.
type unreadableDelaySlot struct {
	equeue.Store
	slot  uint64
	reads atomic.Int64 // Reads that reached slot
}

func (s *unreadableDelaySlot) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	if q == (store.QueueID{}) && from <= s.slot && s.slot < to {
		s.reads.Add(1)
		return nil, fmt.Errorf("%w: delay-log slot %d unreadable", store.ErrDamaged, s.slot)
	}
	return s.Store.Read(q, from, to, max, maxBytes)
}

// A delayed message whose record cannot be read back is reported corrupt
// (counted once in Stats().CorruptRecords) and skipped, durably: every
// message due after it is delivered once, and a reopen neither reads it
// again nor loses the others (found by review: the scheduler stopped at
// the failed read on every pass, holding every later delayed message back
// for ever).
func TestDelay_UnreadableRecordIsSkippedAndTheRestDelivered(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	st := &unreadableDelaySlot{Store: keepOpen{mem}, slot: 1}
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 5 { // slots 0 to 4, due in this order
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
			{Body: fmt.Appendf(nil, "m%d", i), Delay: time.Duration(i+1) * time.Millisecond}}})
		require.NoError(t, err)
	}
	want := []string{"m0", "m2", "m3", "m4"}
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) >= len(want) },
		"the messages due after the unreadable one are delivered: got %v", func() any { return queueBodies(t, e, "t", 0) })
	assert.Equal(t, want, queueBodies(t, e, "t", 0))
	// The scheduler counts the skip once it has seen its drop stored, which
	// may come after the moves written with it are visible.
	eventually(t, waitLong, func() bool { return e.Stats().CorruptRecords > 0 }, "the unreadable message is counted")
	assert.Equal(t, uint64(1), e.Stats().CorruptRecords, "the unreadable message is counted once")
	require.NoError(t, e.Close())

	st = &unreadableDelaySlot{Store: keepOpen{mem}, slot: 1}
	e, err = equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m5"), Delay: time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) > len(want) },
		"a delayed message sent after the reopen is delivered: got %v", func() any { return queueBodies(t, e, "t", 0) })
	assert.Equal(t, append(want, "m5"), queueBodies(t, e, "t", 0), "each delivered once")
	assert.Zero(t, st.reads.Load(), "the skipped record is not read again")
	assert.Zero(t, e.Stats().CorruptRecords, "nor counted again")
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, info.Pending, "nothing is left pending")
}

// Delay-index entries a damaged store garbled (a key or value of the wrong
// form) are dropped as corrupt, counted once, and the delayed messages
// around them are delivered.
func TestDelay_GarbledIndexEntriesAreCountedAndSkipped(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.Close())
	garbled := []store.MetaOp{
		{Key: []byte("d/\x00\x01"), Value: []byte("12345678")},                                                  // a key cut short
		{Key: []byte("d/\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x07"), Value: []byte("x")}, // a value cut short
	}
	require.NoError(t, mem.Write(&store.Batch{Meta: garbled}))

	e, err = equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
			{Body: fmt.Appendf(nil, "m%d", i), Delay: time.Millisecond}}})
		require.NoError(t, err)
	}
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) >= 3 },
		"the delayed messages are delivered: got %v", func() any { return queueBodies(t, e, "t", 0) })
	assert.Equal(t, []string{"m0", "m1", "m2"}, queueBodies(t, e, "t", 0))
	assert.Equal(t, uint64(2), e.Stats().CorruptRecords, "each garbled entry is counted")
	require.NoError(t, e.Close())

	e, err = equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m3"), Delay: time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) > 3 },
		"a delayed message sent after the reopen is delivered")
	assert.Equal(t, []string{"m0", "m1", "m2", "m3"}, queueBodies(t, e, "t", 0))
	assert.Zero(t, e.Stats().CorruptRecords, "the dropped entries are not met again")
}
