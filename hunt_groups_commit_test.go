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

// failOffsetWrites makes the store refuse the next n writes that store an
// offset of group g and no message (the writer may put a commit in the
// write of an append, whose refusal would fail the test's send).
func failOffsetWrites(fs *faultstore.FS, g string, n int64) *atomic.Int64 {
	var left atomic.Int64
	left.Store(n)
	prefix := []byte("off/" + g + "\x00")
	fs.OnWrite(func(b *store.Batch) error {
		if len(b.Entries) > 0 {
			return nil
		}
		for _, op := range b.Meta {
			if bytes.HasPrefix(op.Key, prefix) && left.Add(-1) >= 0 {
				return faultstore.ErrInjected
			}
		}
		return nil
	})
	return &left
}

// A commit whose store write fails, then a second member joining (the
// queues handed over, their handover commits failing too): every message
// is handled, and once the store writes again the group's offsets reach
// every queue's end, never moving back on the way.
func TestHuntGroups_OffsetWriteFailuresAcrossRebalance(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			rig := newFaultRig(t, kind, nil)
			e := rig.E
			const queues, n = 4, 40
			require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
			var seen huntSeen
			mk := func(id string) equeue.ConsumerOptions {
				return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					CommitInterval: 50 * time.Millisecond,
					Handler:        func(_ context.Context, m *equeue.Message) error { seen.add(id, m); return nil }}
			}
			startConsumer(t, e, mk("a"))
			huntSend(t, e, "t", queues, "one", n)
			eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == n }, "first batch committed")

			var low atomic.Int64 // the lowest sum seen after the first batch
			low.Store(n)
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for {
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
					if s := huntCommitted(t, e, "g"); s < low.Load() {
						low.Store(s)
					}
				}
			}()
			left := failOffsetWrites(rig.FS, "g", 3)
			huntSend(t, e, "t", queues, "two", n)
			startConsumer(t, e, mk("b"))
			eventually(t, 10*time.Second, func() bool { return left.Load() < 0 }, "the offset writes failed")
			eventually(t, 10*time.Second, func() bool { return seen.distinct() == 2*n }, "every message handled: missing %v", seen.missing("two", n))
			eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 2*n }, "offsets reach the end")
			close(stop)
			<-watched
			assert.EqualValues(t, n, low.Load(), "the committed offsets never moved back")
		})
	}
}

// A commit whose Sync fails is stored but not known durable: the error
// says so (ErrNotDurable-like, never "not stored"), the engine shows the
// offset, and a reopen keeps it.
func TestHuntGroups_PullCommitSyncFailureIsStoredNotKnownDurable(t *testing.T) {
	rig := newFaultRig(t, "badger", nil)
	e := rig.E
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	huntSend(t, e, "t", 1, "m", 5)
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctxT(t)))
	defer func() { _ = pc.Close() }()
	q := equeue.QueueRef{Topic: "t", Queue: 0}
	msgs, err := pc.Fetch(ctxT(t), q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 5)
	rig.FS.FailSyncs(1)
	err = pc.Commit(ctxT(t), q, 5)
	t.Logf("commit with a failed sync: %v", err)
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "stored but not known durable is told apart from not stored")
	assert.EqualValues(t, 5, huntCommitted(t, e, "g"))
}
