package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// groupCommitted returns group's committed offset of each queue of topic.
func groupCommitted(t *testing.T, e *equeue.Engine, group, topic string) map[int]int64 {
	t.Helper()
	gi, err := e.Group(context.Background(), group)
	require.NoError(t, err)
	out := map[int]int64{}
	for _, q := range gi.Queues {
		if q.Topic == topic {
			out[q.Queue] = q.Committed
		}
	}
	return out
}

// TestResetOffsets_FailedWriteChangesNothing: an offset reset whose store
// write fails changes no offset in memory, even when some of the reset's
// offsets equal the stored ones (the engine once judged the whole write by
// reading back its first op, and a failed write whose first op happened to
// hold already was taken as stored: memory then ran ahead of the store until
// a restart). A reset whose fsync fails is applied and says the outcome is
// unknown.
func TestResetOffsets_FailedWriteChangesNothing(t *testing.T) {
	for _, kind := range []string{"memory", "badger"} {
		t.Run(kind, func(t *testing.T) {
			const queues = 8
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			ctx := context.Background()
			require.NoError(t, r.E.CreateTopic(ctx, "t", queues))
			_, err := r.E.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs("a")})
			require.NoError(t, err)
			join := &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Clustering, Subscriptions: []equeue.Subscription{{Topic: "t", Filter: "*"}}}
			_, err = r.E.JoinGroup(ctx, join)
			require.NoError(t, err)
			require.NoError(t, r.E.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
			at := func(q0 int64) equeue.ResetRequest {
				offs := map[equeue.QueueRef]int64{}
				for q := 0; q < queues; q++ {
					offs[equeue.QueueRef{Topic: "t", Queue: q}] = 0
				}
				offs[equeue.QueueRef{Topic: "t", Queue: 0}] = q0
				return equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: offs}
			}
			require.NoError(t, r.E.ResetOffsets(ctx, "g", at(0)))

			// Seven of the eight offsets already hold; the write order of a
			// reset follows a map, so repeat until a held one came first.
			for i := 0; i < 30; i++ {
				r.FS.FailWrites(1)
				err := r.E.ResetOffsets(ctx, "g", at(1))
				require.ErrorIs(t, err, faultstore.ErrInjected)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "a failed write is not stored")
				require.Equal(t, int64(0), groupCommitted(t, r.E, "g", "t")[0], "attempt %d: a reset whose write failed moved the offset", i)
			}

			r.FS.FailSyncs(1)
			err = r.E.ResetOffsets(ctx, "g", at(1))
			require.ErrorIs(t, err, equeue.ErrIndeterminate, "a write whose fsync failed is kept, its outcome unknown")
			assert.Equal(t, int64(1), groupCommitted(t, r.E, "g", "t")[0])
			if kind == "badger" {
				e := r.reopen()
				assert.Equal(t, int64(1), groupCommitted(t, e, "g", "t")[0], "the kept reset is stored")
			}
		})
	}
}
