package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// A ResetOffsets whose store write fails while members consume is "not
// stored": it matches neither ErrIndeterminate nor success, the offsets
// and the members' grants stay (the members go on consuming from where
// they were), and the same reset succeeds once the store writes again.
func TestHuntGroups_ResetWhoseWriteFailsWhileMembersConsume(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	const queues = 2
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			CommitInterval: 10 * time.Millisecond,
			Handler:        func(_ context.Context, m *equeue.Message) error { seen.add(id, m); return nil }}
	}
	startConsumer(t, e, mk("a"))
	startConsumer(t, e, mk("b"))
	huntSend(t, e, "t", queues, "one", 20)
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 20 }, "first batch committed")
	gi, err := e.Group(ctxT(t), "g")
	require.NoError(t, err)
	epoch := gi.Epoch
	failOffsetWrites(rig.FS, "g", 1)
	err = e.ResetOffsets(ctxT(t), "g", equeue.ResetRequest{To: equeue.ResetToEarliest})
	require.ErrorIs(t, err, faultstore.ErrInjected)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "a refused write is not stored, not unknown")
	gi, err = e.Group(ctxT(t), "g")
	require.NoError(t, err)
	assert.Equal(t, epoch, gi.Epoch, "no member was fenced")
	assert.EqualValues(t, 20, huntCommitted(t, e, "g"), "the offsets stay")
	huntSend(t, e, "t", queues, "two", 10)
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 30 }, "the members go on")
	seen.mu.Lock()
	for b, n := range seen.count {
		assert.Equal(t, 1, n, "%s handled once: the failed reset moved nothing", b)
	}
	seen.mu.Unlock()

	require.NoError(t, e.ResetOffsets(ctxT(t), "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	eventually(t, 10*time.Second, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for _, n := range seen.count {
			if n < 2 {
				return false
			}
		}
		return len(seen.count) == 30
	}, "everything handled again after the reset")
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 30 }, "offsets back at the end")
}
