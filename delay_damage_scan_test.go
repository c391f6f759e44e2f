package equeue_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// damagedDelayValue is a store that cannot read back the value of the
// delay-index key of delay-log slot (damagedMeta).
func damagedDelayValue(st equeue.Store, slot uint64) *damagedMeta {
	return &damagedMeta{Store: st, damaged: func(k []byte) error {
		if len(k) == len("d/")+16 && bytes.HasPrefix(k, []byte("d/")) && binary.BigEndian.Uint64(k[len(k)-8:]) == slot {
			return fmt.Errorf("%w: value of delay key %q unreadable", store.ErrDamaged, k)
		}
		return nil
	}}
}

// Delayed skips a delay-index entry whose value cannot be read back, as
// the scheduler's scan does, and lists the others; it leaves counting it
// to the scheduler, which drops it when it comes due (found by review:
// Delayed failed with the store's error until then).
func TestDelayed_SkipsAnUnreadableIndexValue(t *testing.T) {
	ctx := context.Background()
	st := damagedDelayValue(keepOpen{store.NewMemory()}, 1)
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 3 { // slots 0 to 2, due in this order, far ahead: the scheduler stops at slot 0
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
			{Body: fmt.Appendf(nil, "m%d", i), Delay: time.Duration(i+1) * time.Hour}}})
		require.NoError(t, err)
	}

	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, info.Pending, "the unreadable entry is skipped")
	assert.True(t, info.Complete)
	require.Len(t, info.Next, 2)
	assert.Equal(t, "t", info.Next[0].Topic)
	assert.Equal(t, "t", info.Next[1].Topic)
	assert.True(t, info.Next[0].DeliverAt.Before(info.Next[1].DeliverAt), "soonest first")
	assert.Zero(t, e.Stats().CorruptRecords, "Delayed does not count it: the scheduler does when it drops it")
}

// DeleteGroup goes past a delay-index entry whose value cannot be read
// back: it deletes the group's pending retries and leaves that entry
// (whose topic is unknown) for the scheduler to drop when it comes due
// (found by review: the delete failed with the store's error until then).
func TestDeleteGroup_SkipsAnUnreadableDelayIndexValue(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	st := damagedDelayValue(keepOpen{mem}, 1)
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("retry")}}})
	require.NoError(t, err)
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { return equeue.RetryAfter(time.Hour, errors.New("later")) }})
	eventually(t, waitLong, func() bool {
		d, err := e.Delayed(ctx, 0)
		return err == nil && d.Pending == 1
	}, "the retry is pending (delay-log slot 0)")
	require.NoError(t, c.Close())
	// Slot 1, due after the retry: the scheduler stops before it.
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("later"), Delay: 2 * time.Hour}}})
	require.NoError(t, err)

	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))
	var left int
	require.NoError(t, mem.ScanMeta([]byte("d/"), func(_, _ []byte) error { left++; return nil }))
	assert.Equal(t, 1, left, "the retry's index entry is deleted, the unreadable one left")
	_, err = e.Topic(ctx, equeue.RetryTopic("g"))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the group's retry topic is deleted")
	assert.Zero(t, e.Stats().CorruptRecords, "DeleteGroup does not count it")
}
