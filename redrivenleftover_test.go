package equeue_test

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// DeleteTopic deletes a dead-letter topic's redriven marks in a write of
// their own, after the topic's: a crash or a failed write in between
// leaves them, naming the incarnation they were written for, so they do
// not answer for the next one. Once such a leftover is lost (unreadable
// or garbled) it no longer names its incarnation and is taken as
// redriven for whichever is there: the dead letter the next incarnation
// stores at its offset, never redriven, was listed Redriven and passed by
// every Redrive (found by review). Creating the dead-letter topic again
// now first deletes the group's marks left from before.
func TestRedrive_LostMarkLeftFromADeletedDeadLetterTopicAnswersForNoLaterOne(t *testing.T) {
	for _, how := range markDamage {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			mem := store.NewMemory()
			const prefix = "dlqr/g\x00"
			var unreadable atomic.Bool
			st := &damagedMeta{Store: keepOpen{mem}, damaged: func(k []byte) error {
				if !unreadable.Load() || !isMarkAt(k, prefix, 0) {
					return nil
				}
				if _, err := mem.GetMeta(k); err == nil { // a value stored, which cannot be read back
					return fmt.Errorf("%w: value of %q unreadable", store.ErrDamaged, k)
				}
				return nil
			}}
			e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b")})
			require.NoError(t, err)
			g, res := joinAndPull(t, e, "g", "m", "t")
			require.Len(t, res.Messages, 2)
			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
			require.NoError(t, err)
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			var key []byte
			require.NoError(t, mem.ScanMeta([]byte(prefix), func(k, _ []byte) error {
				if isMarkAt(k, prefix, 0) {
					key = bytes.Clone(k)
				}
				return nil
			}))
			require.NotNil(t, key, "the dead letter at 0 is marked redriven")

			require.NoError(t, e.DeleteTopic(ctx, equeue.DLQTopic("g")))
			require.Zero(t, metaKeys(t, mem, "dlqr/"), "the deleted topic's marks are deleted")
			// The mark left by a crash between the two writes, and lost.
			require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: key, Value: []byte{0}}}}))
			unreadable.Store(how == "unreadable")

			_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 1, DeadLetter: true})
			require.NoError(t, err, "the dead-letter topic is created again")
			dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			require.Len(t, dl, 1)
			assert.Equal(t, int64(0), dl[0].Offset)
			assert.False(t, dl[0].Redriven, "the new topic's first dead letter was never redriven")
			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "it is redriven")
		})
	}
}
