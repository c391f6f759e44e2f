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

// A group starting from the latest message whose first start-offset write
// the store refuses: the Consumer's Start returns only once its queue is
// consumed, its start stored, so a message sent once Start returned is
// handled by the group even when the engine is reopened right after (the
// consumer closed before it tried again).
func TestHuntGroups_ConsumerStartReturnsOnceItsStartIsStored(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "old", 3)
	var refused atomic.Int32
	prefix := []byte("off/g\x00")
	rig.FS.OnWrite(func(b *store.Batch) error {
		if len(b.Entries) > 0 { // a send in the same write would fail too
			return nil
		}
		for _, op := range b.Meta {
			if bytes.HasPrefix(op.Key, prefix) && refused.CompareAndSwap(0, 1) {
				return faultstore.ErrInjected // the first start write only
			}
		}
		return nil
	})
	opts := equeue.ConsumerOptions{Group: "g", ID: "a", From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }}
	c, err := equeue.NewConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, c.Start(ctxT(t)))
	require.EqualValues(t, 1, refused.Load(), "the first start write was refused")
	require.NoError(t, c.Close())
	huntSend(t, e, "t", 1, "sent-after-start", 1)

	e = rig.reopen()
	gi, err := e.Group(ctxT(t), "g")
	require.NoError(t, err)
	committed := map[string]int64{}
	for _, r := range gi.Queues {
		committed[r.Topic] = r.Committed
	}
	assert.EqualValues(t, 3, committed["t"], "the start Start consumed from is stored")

	var seen huntSeen
	opts.Handler = func(_ context.Context, m *equeue.Message) error { seen.add("a", m); return nil }
	c2, err := equeue.NewConsumer(e, opts)
	require.NoError(t, err)
	defer func() { _ = c2.Close() }()
	require.NoError(t, c2.Start(ctxT(t)))
	eventually(t, 5*time.Second, func() bool { return seen.distinct() == 1 }, "the message sent after Start returned is handled")
	require.Empty(t, seen.missing("sent-after-start", 1))
}
