package equeue_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestSendBack_DeleteTopicOfTheSourceBeforeTheWriteLeavesNoMark deletes
// the topic a SendBack's message was pulled from once the SendBack has
// read the message and before it queues its copy and mark. DeleteTopic
// of an ordinary topic takes no gate of the group, so it goes through;
// it deletes the groups' send-back marks of the topic. The SendBack must
// then store no mark of the deleted topic (nothing would delete it: the
// group's offsets of the topic went with it, and it would load again at
// every open): it is refused with ErrTopicNotFound, nothing stored.
// Before, it stored its copy and a mark of the deleted topic.
func TestSendBack_DeleteTopicOfTheSourceBeforeTheWriteLeavesNoMark(t *testing.T) {
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

			var once sync.Once
			equeue.OnSendBackHeld(e, func(string) {
				once.Do(func() { require.NoError(t, e.DeleteTopic(ctx, "t")) })
			})
			t.Cleanup(func() { equeue.OnSendBackHeld(e, nil) })
			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1})
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "the message's topic is deleted: nothing is sent back")

			marks := func() []string {
				var out []string
				for k := range metaDump(t, r.FS) {
					if strings.HasPrefix(k, "sbk/") {
						out = append(out, k)
					}
				}
				return out
			}
			assert.Empty(t, marks(), "no send-back mark of the deleted topic")
			r.reopen()
			assert.Empty(t, marks(), "none after a reopen")
		})
	}
}
