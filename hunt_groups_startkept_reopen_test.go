package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A Start whose context ended while its start offset could not be stored
// returns, its queues starting in the background, and the start resolved
// is kept in memory. A consumer closed before a retry stored it, then the
// engine closed and reopened: Engine.Close stores the kept start, so the
// group's next member, from the latest message, still gets the message
// sent once that Start returned.
func TestHuntGroups_KeptStartSurvivesAReopen(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 3)
	ctx, failing := refuseStartWrites(t, rig, "off/g\x00")
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	huntSend(t, e, "t", 1, "sent-after-start", 1)
	require.NoError(t, c.Close(), "nothing to commit: the queue never started")
	failing.Store(false)

	e = rig.reopen()
	gi, err := e.Group(ctxT(t), "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" {
			assert.EqualValues(t, 3, q.Committed, "the start kept in memory was stored by Close")
		}
	}
	var seen huntSeen
	c2, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(_ context.Context, m *equeue.Message) error { seen.add("a", m); return nil }})
	require.NoError(t, err)
	defer func() { require.NoError(t, c2.Close()) }()
	require.NoError(t, c2.Start(ctxT(t)))
	eventually(t, waitLong, func() bool { return seen.distinct() == 1 }, "the message sent after the first Start returned is handled")
	assert.Empty(t, seen.missing("sent-after-start", 1))
}
