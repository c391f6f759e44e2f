package equeue_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A group starting from the latest message whose first member's start
// offsets cannot be stored at first (the store refuses the write): a
// message sent once Start returned (its ctx ended while the start could
// not be stored) is handled when the store writes again; the start is not
// moved past it, and the group's lag counts it meanwhile.
func TestHuntGroups_LatestStartWhoseWriteFailsSkipsNothingSentAfterStart(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 3)
	ctx, failing := refuseStartWrites(t, rig, "off/g\x00")
	var seen huntSeen
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error { seen.add("a", m); return nil }})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	// Start's ctx ends after the first apply failed: Start returns, and
	// the consumer consumes once a later apply stores the start.
	require.NoError(t, c.Start(ctx))
	huntSend(t, e, "t", 1, "sent-after-start", 1)
	gi, err := e.Group(ctxT(t), "g")
	require.NoError(t, err)
	for _, r := range gi.Queues {
		if r.Topic == "t" {
			assert.EqualValues(t, 1, r.Lag, "the lag counts from the start the group will take")
		}
	}
	failing.Store(false)
	eventually(t, 5*time.Second, func() bool { return seen.distinct() == 1 }, "the message sent after Start returned is handled")
	assert.Empty(t, seen.missing("sent-after-start", 1))
	assert.Equal(t, 1, seen.distinct(), "nothing from before the group's start")
}

// refuseStartWrites makes rig's store refuse the metadata-only writes
// (a send in the same write would fail too) of keys starting with prefix:
// a group's (or one broadcasting member's) offsets, the start a member's
// fetch resolves included. The returned context, for a Start, ends at the
// first refusal, so that Start returns with its queues starting in the
// background; failing stops the refusals once set false.
func refuseStartWrites(t *testing.T, rig *faultRig, prefix string) (context.Context, *atomic.Bool) {
	t.Helper()
	failing := new(atomic.Bool)
	failing.Store(true)
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)
	rig.FS.OnWrite(func(b *store.Batch) error {
		if len(b.Entries) > 0 {
			return nil
		}
		for _, op := range b.Meta {
			if failing.Load() && bytes.HasPrefix(op.Key, []byte(prefix)) {
				cancel()
				return faultstore.ErrInjected
			}
		}
		return nil
	})
	return ctx, failing
}
