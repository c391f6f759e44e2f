package equeue_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestSendBack_DeleteTopicOfTheRetryTopicWaitsForTheSendBack deletes a
// group's retry topic with DeleteTopic while a SendBack of a message the
// member pulled from it is about to queue its copy and mark. The deletion
// must wait for the SendBack (as it waits for a redrive's send) and
// delete its copy and mark with the topic: afterwards no send-back mark
// of the deleted retry topic is stored (one would load again at every
// open, and nothing deletes it: the group's offsets of the topic went
// with it), also after a reopen, and the retry topic is not made again
// for the copy. Before, the SendBack was ordered only by the group's
// send-back gate, which DeleteTopic does not take: the deletion went
// through in between, and the SendBack made the retry topic again and
// stored a mark of the deleted one.
func TestSendBack_DeleteTopicOfTheRetryTopicWaitsForTheSendBack(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("failed")})
			require.NoError(t, err)
			g, res := joinAndPull(t, e, "g", "m", "t")
			require.Len(t, res.Messages, 1)
			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1})
			require.NoError(t, err)

			// The member pulls the retry.
			retry := equeue.RetryTopic("g")
			var rg equeue.Grant
			eventually(t, waitLong, func() bool {
				a, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: -1})
				require.NoError(t, err)
				for _, q := range a.Queues {
					if q.Topic == retry {
						rg = q
						res, err := e.Pull(ctx, &equeue.PullRequest{Topic: retry, Queue: q.Queue, Group: "g", Member: "m", Epoch: q.Epoch})
						require.NoError(t, err)
						return len(res.Messages) == 1
					}
				}
				return false
			}, "the member pulls the retry")

			deleted := make(chan error, 1)
			var once sync.Once
			equeue.OnSendBackHeld(e, func(string) {
				once.Do(func() {
					go func() { deleted <- e.DeleteTopic(ctx, retry) }()
					eventually(t, waitLong, func() bool { return equeue.NameGateRefs(e, "g") >= 2 || len(deleted) > 0 },
						"the deletion waits for the SendBack, or is done")
				})
			})
			t.Cleanup(func() { equeue.OnSendBackHeld(e, nil) })
			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: rg, Offset: 0, Attempts: 2})
			require.NoError(t, err, "the SendBack began before the deletion: it is done")
			require.NoError(t, <-deleted)

			retryMarks := func() []string {
				var out []string
				for k := range metaDump(t, r.FS) {
					if strings.HasPrefix(k, "sbk/g\x00") && strings.Contains(k, retry) {
						out = append(out, k)
					}
				}
				return out
			}
			assert.Empty(t, retryMarks(), "no send-back mark of the deleted retry topic")
			_, err = e.Topic(ctx, retry)
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the retry topic is not made again for the copy of a message of the deleted one")
			r.reopen()
			assert.Empty(t, retryMarks(), "none after a reopen")
		})
	}
}
