package equeue_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A group starting from the latest message whose member could not store
// its start yet (the store refuses the member's offset writes, and Start's
// ctx ended: Start returned; the member then closed) owns a queue added to
// its topic from the start, as a group with a stored offset there does: a
// message sent to the new queue before a member stores the group's starts
// is handled, not skipped by a start resolved at the new queue's end.
func TestHuntGroups_QueueAddedWhileTheStartIsNotStoredSkipsNothing(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 3)
	var failing atomic.Bool
	failing.Store(true)
	prefix := []byte("off/g\x00")
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	rig.FS.OnWrite(func(b *store.Batch) error {
		if !failing.Load() || len(b.Entries) > 0 || len(b.Meta) == 0 {
			return nil
		}
		for _, op := range b.Meta {
			if !bytes.HasPrefix(op.Key, prefix) {
				return nil // AddQueues' write (the topic's and offsets)
			}
		}
		cancel() // Start returns, its queues starting in the background
		return faultstore.ErrInjected
	})
	var seen huntSeen
	opts := equeue.ConsumerOptions{Group: "g", ID: "a", From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error { seen.add("a", m); return nil }}
	c, err := equeue.NewConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	require.NoError(t, c.Close())
	require.NoError(t, e.AddQueues(ctxT(t), "t", 1))
	_, err = e.Append(ctxT(t), &equeue.AppendRequest{Topic: "t", Queue: 1,
		Messages: []*equeue.Message{{Topic: "t", Body: []byte("new-queue-0")}}})
	require.NoError(t, err)
	failing.Store(false)
	c2, err := equeue.NewConsumer(e, opts)
	require.NoError(t, err)
	defer func() { _ = c2.Close() }()
	require.NoError(t, c2.Start(ctxT(t)))
	eventually(t, 5*time.Second, func() bool { return seen.distinct() == 1 }, "the message sent to the added queue is handled")
	require.Empty(t, seen.missing("new-queue", 1))
}
