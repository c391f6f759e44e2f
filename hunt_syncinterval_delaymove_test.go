package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// A delayed message sent with SyncAlways on a SyncInterval engine, on a
// dedup topic, whose move into its queue meets a failing background
// fsync: written while the fsync runs and completed before it fails,
// written while it runs and completed after, or due only after the
// failure stopped the engine. Whichever, after a reopen it is delivered
// exactly once, nothing of it is pending any more, and a retry of its ID
// is answered as its send was (a delayed duplicate) and stores nothing.
func TestHuntSyncInterval_DelayedMoveMeetsAFailedFlush(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meet runs once the move's write is held and the background
		// fsync is held; it lets both go in its own order.
		meet func(t *testing.T, r *faultRig, g *syncGate, releaseMove func())
	}{
		{"moveCompletesBeforeTheFailure", func(t *testing.T, r *faultRig, g *syncGate, releaseMove func()) {
			releaseMove()
			eventually(t, waitLong, func() bool {
				res, err := r.E.Pull(ctxBG, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 1})
				return err == nil && len(res.Messages) == 1
			}, "the move completed (SyncInterval: once written)")
			g.release(faultstore.ErrInjected)
		}},
		{"failureBeforeTheMoveCompletes", func(t *testing.T, r *faultRig, g *syncGate, releaseMove func()) {
			g.release(faultstore.ErrInjected)
			eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the background fsync failed")
			releaseMove()
		}},
	} {
		for _, kind := range []string{"memory", "badger"} {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				r := newFaultRig(t, kind, &equeue.Options{Sync: equeue.SyncInterval(time.Millisecond)})
				require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
				// The move is the only later write that carries the body
				// (the send's own is held by no one: the hook matches once).
				send := func() (equeue.AppendResult, error) {
					return r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Sync: &equeue.SyncAlways,
						Messages: []*equeue.Message{{Topic: "t", ID: "late", Body: []byte("late-body"), Delay: 100 * time.Millisecond}}})
				}
				sent, err := send()
				require.NoError(t, err)
				require.True(t, sent.Delayed)
				inMove, releaseMove := holdWriteOf(t, r, "late-body")
				g := newSyncGate(t, r.FS)
				g.arm()
				g.waitEntered(t)
				select {
				case <-inMove:
				case <-time.After(waitLong):
					t.Fatal("the delayed message never came due")
				}
				tc.meet(t, r, g, releaseMove)
				eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the background fsync failed")

				e := r.reopen()
				eventually(t, waitLong, func() bool {
					info, err := e.Delayed(ctxBG, 1)
					return err == nil && info.Pending == 0
				}, "nothing pending after the reopen")
				assert.Len(t, crashReadTopic(t, ctxBG, e, "t")["late"], 1, "delivered once")
				assert.Zero(t, e.Stats().CorruptRecords, "no delay-log entry left without its record")
				again, err := send()
				require.NoError(t, err)
				assert.True(t, again.Duplicate, "its retry is a duplicate")
				assert.True(t, again.Delayed, "answered as its send was")
				// A second reopen moves nothing again.
				e = r.reopen()
				eventually(t, waitLong, func() bool {
					info, err := e.Delayed(ctxBG, 1)
					return err == nil && info.Pending == 0
				}, "nothing pending after the second reopen")
				assert.Len(t, crashReadTopic(t, ctxBG, e, "t")["late"], 1, "delivered once")
				assert.Zero(t, e.Stats().CorruptRecords, "no delay-log entry left without its record")
			})
		}
	}
}
