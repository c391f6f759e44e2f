package kafka_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// corruptPulls is an engine whose pulls report the offsets in corrupt as
// records that failed their checksum, as the engine's pull does: skipped,
// and listed in PullResult.Corrupt.
type corruptPulls struct {
	*equeue.Engine
	mu      sync.Mutex
	corrupt map[int64]bool
}

func (b *corruptPulls) set(offs ...int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.corrupt = map[int64]bool{}
	for _, o := range offs {
		b.corrupt[o] = true
	}
}

func (b *corruptPulls) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := b.Engine.Pull(ctx, req)
	if err != nil {
		return res, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := res.Messages[:0:0]
	for _, m := range res.Messages {
		if b.corrupt[m.Offset] {
			res.Corrupt = append(res.Corrupt, m.Offset)
			continue
		}
		kept = append(kept, m)
	}
	res.Messages = kept
	if len(kept) == 0 && res.Status == equeue.PullFound {
		res.Status = equeue.PullNoMatch
	}
	return res, nil
}

// TestProduce_RetryOfABatchReadCorruptIsAStorageError: after a restart,
// the retry of a batch whose records the partition's read found corrupt
// (or some of them) cannot be told stored or not: it was answered
// DUPLICATE_SEQUENCE_NUMBER, which clients take for stored, or
// OUT_OF_ORDER_SEQUENCE_NUMBER, on which franz-go sends it again under a
// new epoch. It is answered KAFKA_STORAGE_ERROR, which clients retry
// without taking either outcome, nothing is stored, and once the records
// read whole the retry is acknowledged where they are.
func TestProduce_RetryOfABatchReadCorruptIsAStorageError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt []int64
	}{
		{"all its records", []int64{0, 1}},
		{"its last record", []int64{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			b := &corruptPulls{Engine: e}
			cl := kclient(t, serve(t, b, nil))
			init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			pid, epoch := init.ProducerID, init.ProducerEpoch
			require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
			require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d")).ErrorCode)

			// A listener started afresh over the same engine knows nothing
			// of the producer, and reads its records back.
			b.set(tc.corrupt...)
			cl = kclient(t, serve(t, b, nil))
			retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
			assert.Equal(t, kerr.KafkaStorageError, kerr.ErrorForCode(retry.ErrorCode), "not known whether stored: retried")
			assert.Equal(t, int64(-1), retry.BaseOffset)
			assert.Equal(t, int64(4), storedCount(t, e, "t"), "nothing stored")

			b.set()
			retry = produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
			require.Equal(t, int16(0), retry.ErrorCode)
			assert.Equal(t, int64(0), retry.BaseOffset, "acknowledged where it was stored")
			assert.Equal(t, int64(4), storedCount(t, e, "t"), "stored once")
		})
	}
}

// TestProduce_RetryBehindANextBatchReadCorruptIsAStorageError: the state
// rebuilt by the producer's next batch, stored, still cannot tell whether
// a retry of an earlier batch whose records were read corrupt is stored:
// KAFKA_STORAGE_ERROR, not DUPLICATE_SEQUENCE_NUMBER, and nothing stored.
func TestProduce_RetryBehindANextBatchReadCorruptIsAStorageError(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &corruptPulls{Engine: e}
	cl := kclient(t, serve(t, b, nil))
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d")).ErrorCode)

	b.set(0, 1)
	cl = kclient(t, serve(t, b, nil))
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 4, "e"))
	require.Equal(t, int16(0), next.ErrorCode, "the next batch is stored")
	assert.Equal(t, int64(4), next.BaseOffset)
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	assert.Equal(t, kerr.KafkaStorageError, kerr.ErrorForCode(retry.ErrorCode), "not known whether stored: retried")
	assert.Equal(t, int64(5), storedCount(t, e, "t"), "nothing stored")
}
