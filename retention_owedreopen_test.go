package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRetention_CountsItsLeftoversAfterAReopen: a retention cut whose
// record delete failed leaves its messages below the watermark, owed to
// the RetentionResult of the pass that finds them deleted. What is owed
// must survive a reopen: open deletes the leftovers, and the first pass
// after it counts them, once, and none after (nor after one more
// reopen). A trim's leftovers are still not counted as retention's.
// Before, what retention owed was kept in memory only, and a reopen
// forgot it: the messages retention cut were never counted.
func TestRetention_CountsItsLeftoversAfterAReopen(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
			require.NoError(t, err)
			// t: retention's own cut of three messages, whose delete fails.
			late := time.Now().Add(time.Hour)
			r.FS.FailDeletes(1)
			res, err := equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.Error(t, err)
			require.Zero(t, res.Deleted, "nothing deleted yet")
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(3), info.Queues[0].MinOffset)

			// u, made after: a trim's failed delete leaves two messages that
			// are not retention's.
			require.NoError(t, e.CreateTopic(ctx, "u", 1))
			for _, b := range []string{"1", "2", "3"} {
				_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Topic: "u", Body: []byte(b)}}})
				require.NoError(t, err)
			}
			r.FS.FailDeletes(1)
			require.NoError(t, e.SetTopicLimits(ctx, "u", equeue.TopicLimits{MaxMessages: 1}))
			info, err = e.Topic(ctx, "u")
			require.NoError(t, err)
			require.Equal(t, int64(2), info.Queues[0].MinOffset, "the trim cut two messages")

			e = r.reopen()
			info, err = e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(3), info.Queues[0].MinOffset, "the watermark survived the reopen")
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
			require.NoError(t, err)
			assert.Equal(t, int64(3), res.Deleted, "the pass after the reopen counts retention's leftovers, not the trim's")
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
			require.NoError(t, err)
			assert.Zero(t, res.Deleted, "counted once")

			e = r.reopen()
			res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
			require.NoError(t, err)
			assert.Zero(t, res.Deleted, "counted once, also after one more reopen")
			assert.Zero(t, metaKeys(t, r.FS, "owed/"), "nothing left owed in the store")
		})
	}
}

// TestRetention_OwesNothingForLeftoversATrimDeleted: a drop-oldest trim
// deletes what an earlier failed delete left below a queue's watermark,
// retention's leftovers too. Once they are gone, retention owes nothing
// for them (RetentionOwed's owed is zero), whoever deleted them; the next
// pass counts them as deleted, once, as retention cut them. Before, a
// trim that deleted them left them owed.
func TestRetention_OwesNothingForLeftoversATrimDeleted(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
			require.NoError(t, err)

			late := time.Now().Add(time.Hour)
			r.FS.FailDeletes(1)
			_, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
			require.Error(t, err)
			owed, uncounted := equeue.RetentionOwed(e, "t", 0)
			require.Equal(t, int64(3), owed, "the failed delete left three messages")
			require.Equal(t, int64(3), uncounted)

			// Newer messages, which a trim then cuts: its pass deletes
			// retention's leftovers first.
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("4", "5")})
			require.NoError(t, err)
			require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 1}))
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(4), info.Queues[0].MinOffset, "the trim cut one message")
			owed, uncounted = equeue.RetentionOwed(e, "t", 0)
			assert.Zero(t, owed, "the leftovers are gone: retention owes nothing for them")
			assert.Equal(t, int64(3), uncounted, "retention's cut is still to count")

			res, err := equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
			require.NoError(t, err)
			assert.Equal(t, int64(3), res.Deleted, "counted as retention's, once")
			owed, uncounted = equeue.RetentionOwed(e, "t", 0)
			assert.Zero(t, owed)
			assert.Zero(t, uncounted)
		})
	}
}

// TestRetention_DeleteTopicDeletesWhatRetentionOwed: what a failed
// delete left retention owing of a queue is stored until a pass counts
// it; deleting the topic deletes it, and a reopen finds none.
func TestRetention_DeleteTopicDeletesWhatRetentionOwed(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2")})
			require.NoError(t, err)
			r.FS.FailDeletes(1)
			_, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Minute}, time.Now().Add(time.Hour))
			require.Error(t, err)
			require.Equal(t, 1, metaKeys(t, r.FS, "owed/"), "what retention owes is stored")

			require.NoError(t, e.DeleteTopic(ctx, "t"))
			assert.Zero(t, metaKeys(t, r.FS, "owed/"), "deleted with the topic")
			r.reopen()
			assert.Zero(t, metaKeys(t, r.FS, "owed/"), "none after a reopen")
		})
	}
}
