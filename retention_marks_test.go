package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// Round after round of dead letters that are redriven and then trimmed
// from the dead-letter topic (by a retention pass, or by the topic's
// drop-oldest limit) leave no redriven mark behind the dead letters they
// were written for: the engine's metadata does not grow with the run.
func TestRetention_TrimmedDeadLettersLeaveNoRedrivenMarks(t *testing.T) {
	for _, how := range []string{"retention", "drop-oldest"} {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			e, err := equeue.Open("", &equeue.Options{Store: keepOpenStore{fs}, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			f := newDLQFixture(t, e)
			const rounds, perRound, kept = 20, 5, 2
			var before int
			for round := range rounds {
				f.next = queueEnd(t, e, "t") // past the redriven copies, and what retention deleted
				f.fail(t, fmt.Sprint("round ", round), perRound)
				if round == 0 {
					before = metaKeys(t, fs, "")
					if how == "drop-oldest" {
						require.NoError(t, e.SetTopicLimits(ctx, equeue.DLQTopic("g"), equeue.TopicLimits{MaxMessages: kept, Overflow: equeue.OverflowDropOldest}))
					}
				}
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
				require.NoError(t, err)
				require.Positive(t, n)
				// The group finishes what it pulled: its commit passes its
				// send-back marks.
				require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
					Offsets: []equeue.OffsetCommit{{Grant: f.grant, Offset: f.next}}}))
				if how == "retention" {
					_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: 1})
					require.NoError(t, err)
				}
			}
			info, err := e.Topic(ctx, equeue.DLQTopic("g"))
			require.NoError(t, err)
			stored := int(info.Queues[0].MaxOffset - info.Queues[0].MinOffset)
			assert.LessOrEqual(t, stored, kept)
			assert.LessOrEqual(t, metaKeys(t, fs, "dlqr/"), stored, "a redriven mark is left only for a dead letter still stored")
			assert.Zero(t, metaKeys(t, fs, "sbk/"), "the commits passed every send-back mark")
			assert.LessOrEqual(t, metaKeys(t, fs, ""), before+kept, "the metadata does not grow round after round")
		})
	}
}
