package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_RebuiltStateResumesAFirstBatchCutOffByARestart: a
// producer's first batch (sequence 0), too large for one store write, of
// which the listener stored the first records before it restarted, is
// retried after the restart. The listener reads the partition back for
// it as for a batch of another sequence, so the retry stores the others
// only and is acknowledged at the batch's first offset, without a dedup
// window. Before, a batch of sequence 0 was taken as it came: the
// records stored before the restart were stored twice. A producer whose
// ID this listener handed out has no records stored before it, and its
// first batch reads nothing back.
func TestProduce_RebuiltStateResumesAFirstBatchCutOffByARestart(t *testing.T) {
	t.Run("cut off", func(t *testing.T) {
		e := openEngine(t, nil)
		ctx := testCtx(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		const pid, epoch = int64(7002), int16(0)
		// What the listener stored before it restarted, with the IDs it
		// gives (setIDs): the first three records of a batch of
		// sequences 0-4.
		var msgs []*equeue.Message
		for seq, body := range []string{"a", "b", "c"} {
			msgs = append(msgs, &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, int32(seq)), Body: []byte(body), BornAt: time.UnixMilli(1_700_000_000_000)})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
		require.NoError(t, err)

		b := &pullCounting{Engine: e}
		cl := kclient(t, serve(t, b, nil))
		retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b", "c", "d", "e"))
		require.Equal(t, int16(0), retry.ErrorCode, "the retry of the batch cut off is taken")
		assert.Equal(t, int64(0), retry.BaseOffset, "acknowledged at the batch's first offset")
		t.Logf("records read back for the first batch: %d", b.read.Load())
		again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b", "c", "d", "e"))
		require.Equal(t, int16(0), again.ErrorCode, "a duplicate of the batch stored")
		assert.Equal(t, int64(0), again.BaseOffset)
		next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 5, "f"))
		require.Equal(t, int16(0), next.ErrorCode)
		assert.Equal(t, int64(5), next.BaseOffset)

		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
		require.NoError(t, err)
		var bodies []string
		for _, m := range res.Messages {
			bodies = append(bodies, string(m.Body))
		}
		assert.Equal(t, []string{"a", "b", "c", "d", "e", "f"}, bodies, "each record stored once, in order")
	})
	t.Run("an ID the listener handed out", func(t *testing.T) {
		e := openEngine(t, nil)
		ctx := testCtx(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		var msgs []*equeue.Message
		for i := range 100 {
			msgs = append(msgs, &equeue.Message{Body: fmt.Appendf(nil, "n%d", i)})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
		b := &pullCounting{Engine: e}
		cl := kclient(t, serve(t, b, nil))
		init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Equal(t, int16(0), init.ErrorCode)
		got := produceRaw(ctx, t, cl, "t", 0, rawBatch(init.ProducerID, init.ProducerEpoch, 0, "x"))
		require.Equal(t, int16(0), got.ErrorCode)
		assert.Equal(t, int64(100), got.BaseOffset)
		assert.Zero(t, b.read.Load(), "nothing is read back for a producer this listener gave its ID")
	})
}
