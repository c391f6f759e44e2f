package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// failFetches fails every FetchOffsets while fail is set, counting those.
type failFetches struct {
	equeue.Broker
	fail   atomic.Bool
	failed atomic.Int32
}

func (b *failFetches) FetchOffsets(ctx context.Context, group, member string, qs []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if b.fail.Load() {
		b.failed.Add(1)
		return nil, errors.New("fetch cut off")
	}
	return b.Broker.FetchOffsets(ctx, group, member, qs)
}

// TestPullConsumer_AQueueLeftWhileTheFetchOfItsNewGrantFailsClosesChanged:
// a reset grants the consumer's queue anew, under a new epoch, and the
// fetch of the new grant's offset fails, again and again. The old grant
// has left the consumer (Assigned no longer names the queue), so Changed
// is closed, although the new grant is not yet in place. Before, an apply
// whose FetchOffsets failed returned before closing Changed: a loop
// waiting on it kept the queue it had lost until a fetch succeeded, and
// for ever if a newer assignment granted nothing new.
func TestPullConsumer_AQueueLeftWhileTheFetchOfItsNewGrantFailsClosesChanged(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &failFetches{Broker: e}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, pc.Close()) }()
	require.NoError(t, pc.Start(ctx))
	require.Len(t, pc.Assigned(), 1)

	changed := pc.Changed()
	b.fail.Store(true)
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	// The first apply failed and is being tried again: it has returned.
	eventually(t, 20*time.Second, func() bool { return b.failed.Load() >= 2 }, "the new grant's fetch fails and is tried again")
	require.Empty(t, pc.Assigned(), "the old grant left the consumer")
	select {
	case <-changed:
	default:
		t.Fatalf("Assigned changed, Changed was not closed (failed fetches: %d)", b.failed.Load())
	}

	b.fail.Store(false)
	eventually(t, 20*time.Second, func() bool { return len(pc.Assigned()) == 1 }, "the new grant is in place once a fetch succeeds")
}
