package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRetention_CountsNotATrimsLeftovers: a drop-oldest topic limit
// whose record delete failed leaves its cut below the new watermark, and
// the next retention pass deletes it. RetentionResult.Deleted counts what
// retention cut, so it must not count that: the trim cut those messages.
// A cut of retention's own whose delete failed is counted once, by the
// pass that deletes it. Before, the pass counted the trim's leftovers as
// messages retention deleted (and logged them so).
func TestRetention_CountsNotATrimsLeftovers(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
			require.NoError(t, err)

			r.FS.FailDeletes(1)
			require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 1}))
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(2), info.Queues[0].MinOffset, "the trim cut two messages")

			res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1})
			require.NoError(t, err)
			assert.Zero(t, res.Deleted, "the trim's leftovers are not retention's")

			// Retention's own cut, whose delete fails, is counted once,
			// when a later pass deletes it.
			late := time.Now().Add(time.Hour)
			r.FS.FailDeletes(1)
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.Error(t, err)
			assert.Zero(t, res.Deleted, "nothing deleted yet")
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.NoError(t, err)
			assert.Equal(t, int64(1), res.Deleted, "retention's own cut, deleted now")
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.NoError(t, err)
			assert.Zero(t, res.Deleted, "counted once")
		})
	}
}
