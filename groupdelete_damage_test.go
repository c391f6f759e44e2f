package equeue_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// damagedGroupValues cannot read back, once damage is set, the values of
// group g's metadata, offsets, send-back marks and redriven marks
// (damagedMeta).
func damagedGroupValues(st equeue.Store, damage *atomic.Bool) *damagedMeta {
	return &damagedMeta{Store: st, damaged: func(k []byte) error {
		if !damage.Load() {
			return nil
		}
		key := string(k)
		for _, p := range []string{"off/g\x00", "sbk/g\x00", "dlqr/g\x00"} {
			if strings.HasPrefix(key, p) {
				return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
			}
		}
		if key == "grp/g" {
			return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
		}
		return nil
	}}
}

// DeleteGroup deletes the group's keys whose values the store cannot read
// back (its metadata, an offset, a send-back mark, a redriven mark): it
// deletes them without reading them (found by review: the delete, and so
// idle-group expiry, failed with the store's error for good).
func TestDeleteGroup_DeletesKeysWithUnreadableValues(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	var damage atomic.Bool
	st := damagedGroupValues(keepOpen{mem}, &damage)
	e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for range 3 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
	}
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, 3)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}}))
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 2, DeadLetter: true})
	require.NoError(t, err)
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	_, err = e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{dl[0].Offset}})
	require.NoError(t, err)
	left := func() []string {
		var keys []string
		require.NoError(t, mem.ScanMeta(nil, func(k, _ []byte) error {
			for _, p := range []string{"grp/g", "off/g\x00", "sbk/g\x00", "dlqr/g\x00"} {
				if strings.HasPrefix(string(k), p) {
					keys = append(keys, string(k))
				}
			}
			return nil
		}))
		return keys
	}
	before := left()
	for _, p := range []string{"grp/g", "off/g\x00", "sbk/g\x00", "dlqr/g\x00"} {
		require.True(t, strings.Contains(strings.Join(before, "|"), p), "a key %q is stored: %q", p, before)
	}

	damage.Store(true)
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))
	assert.Empty(t, left(), "every key of the group is deleted")
	_, err = e.Group(ctx, "g")
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
	_, err = e.Topic(ctx, equeue.DLQTopic("g"))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the group's dead-letter topic is deleted")
}

// With no topic filter, Delayed leaves out a delay-index entry whose key
// or value is garbled, as it does one whose value cannot be read back and
// as a namespace's Delayed does: the scheduler counts and drops it when it
// reaches it (found by review: it was counted in Pending under an empty
// topic name).
func TestDelayed_LeavesOutAGarbledIndexEntry(t *testing.T) {
	ctx := context.Background()
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("m"), Delay: time.Hour}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	// Both sort after the pending message's key (its time's first byte is
	// below 0xff), where the scheduler, waiting for that message, stops.
	garbled := []store.MetaOp{
		{Key: []byte("d/\xff\x01"), Value: []byte("12345678")},                                                  // a key cut short
		{Key: []byte("d/\x7f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07"), Value: []byte("x")}, // a value cut short
	}
	require.NoError(t, mem.Write(&store.Batch{Meta: garbled}))

	e, err = equeue.Open("", &equeue.Options{Store: keepOpen{mem}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, info.Pending, "only the sound entry is counted")
	require.Len(t, info.Next, 1)
	assert.Equal(t, "t", info.Next[0].Topic)
}
