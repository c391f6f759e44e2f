package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_RebuiltStateResumesABatchCutOffByARestart: a batch too
// large for one store write, of which the listener stored the first
// records before it restarted, is retried after the restart at the same
// sequence numbers. The state rebuilt from the partition knows those
// records, so the retry stores the others only and is acknowledged at
// the batch's first offset, as after a partial failure without a restart.
// Before, the rebuilt state took the records stored for the batch's end
// and refused the retry OUT_OF_ORDER_SEQUENCE_NUMBER (franz-go then starts
// a new epoch and stores the records again).
func TestProduce_RebuiltStateResumesABatchCutOffByARestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dedup time.Duration
	}{
		{"no dedup window", 0},
		{"dedup window", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: tc.dedup}))
			const pid, epoch = int64(7001), int16(0)
			// What the listener stored before it restarted, with the IDs
			// it gives (setIDs) and the records' timestamp: a batch of sequences 0-1, then the first
			// three records of a batch of sequences 2-6.
			var msgs []*equeue.Message
			for seq, body := range []string{"a", "b", "c", "d", "e"} {
				msgs = append(msgs, &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, int32(seq)), Body: []byte(body), BornAt: time.UnixMilli(1_700_000_000_000)})
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
			require.NoError(t, err)

			cl := kclient(t, serve(t, e, nil))
			retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d", "e", "f", "g"))
			require.Equal(t, int16(0), retry.ErrorCode, "the retry of the batch cut off is taken")
			assert.Equal(t, int64(2), retry.BaseOffset, "acknowledged at the batch's first offset")
			again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d", "e", "f", "g"))
			require.Equal(t, int16(0), again.ErrorCode, "a duplicate of the batch stored")
			assert.Equal(t, int64(2), again.BaseOffset)
			next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 7, "h"))
			require.Equal(t, int16(0), next.ErrorCode)
			assert.Equal(t, int64(7), next.BaseOffset)

			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
			require.NoError(t, err)
			var bodies []string
			for _, m := range res.Messages {
				bodies = append(bodies, string(m.Body))
			}
			assert.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, bodies, "each record stored once, in order")
		})
	}
}
