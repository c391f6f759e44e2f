package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestProduce_IdempotentRetryAfterPartialBatchStoresTheRest: an idempotent
// producer's batch larger than one store write, whose second chunk failed
// after the first was stored (KAFKA_STORAGE_ERROR, retried), is stored
// once by its retry: the retry stores the records the failed try did not,
// and is acknowledged at the batch's first offset. Before, without a dedup
// window, the retry stored the first chunk a second time.
func TestProduce_IdempotentRetryAfterPartialBatchStoresTheRest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dedup time.Duration
	}{
		{"no dedup window", 0},
		{"dedup window", time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := faultstore.New(store.NewMemoryWithLimits(store.Limits{MaxEntries: 16}))
			e := openEngine(t, &equeue.Options{Store: fs})
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: tc.dedup}))
			cl := kclient(t, serve(t, e, nil))
			init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			pid, epoch := init.ProducerID, init.ProducerEpoch
			failSecondWrite(fs)
			values := numberedValues(40)
			first := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, values...))
			require.Equal(t, int16(56), first.ErrorCode, "KAFKA_STORAGE_ERROR: retry")
			stored := storedCount(t, e, "t")
			require.Positive(t, stored, "the first chunk was stored")
			require.Less(t, stored, int64(len(values)))

			retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, values...))
			require.Equal(t, int16(0), retry.ErrorCode)
			assert.Equal(t, int64(0), retry.BaseOffset, "acknowledged at the batch's first offset")
			again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, values...))
			require.Equal(t, int16(0), again.ErrorCode, "a duplicate of the stored batch")
			assert.Equal(t, int64(0), again.BaseOffset)
			next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, int32(len(values)), "next"))
			require.Equal(t, int16(0), next.ErrorCode)
			assert.Equal(t, int64(len(values)), next.BaseOffset)

			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
			require.NoError(t, err)
			var bodies []string
			for _, m := range res.Messages {
				bodies = append(bodies, string(m.Body))
			}
			assert.Equal(t, append(values, "next"), bodies, "the batch stored once, in order")
		})
	}
}
