package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// legacyRecords stores, as a listener before marks did (IDs
// kafka-<producer>-<epoch>-<partition>-<sequence>, without a mark), the
// records of a batch of pid from sequence number seq on partition 0 of
// topic.
func legacyRecords(t *testing.T, e *equeue.Engine, topic string, pid int64, epoch int16, seq int, bodies ...string) {
	t.Helper()
	var msgs []*equeue.Message
	for i, body := range bodies {
		msgs = append(msgs, &equeue.Message{ID: fmt.Sprintf("kafka-%d-%d-0-%d", pid, epoch, seq+i), Body: []byte(body), BornAt: time.UnixMilli(1_700_000_000_000)})
	}
	_, err := e.Append(testCtx(t), &equeue.AppendRequest{Topic: topic, Queue: 0, Messages: msgs})
	require.NoError(t, err)
}

// TestProduce_RebuildReadsRecordsStoredBeforeMarks: an idempotent
// producer whose batches a listener before marks stored, and whose
// answer the restart into this version lost, sends them again. The
// rebuild read no unmarked record as the producer's, so the retry was
// taken as it came and stored a second time (the dedup window does not
// know it either: its IDs now carry a mark). Records without a mark
// stored before the partition's first marked one are the previous
// version's: the retry is acknowledged where it was stored, and the
// producer's next batch follows.
func TestProduce_RebuildReadsRecordsStoredBeforeMarks(t *testing.T) {
	t.Run("alone", func(t *testing.T) {
		e := openEngine(t, nil)
		ctx := testCtx(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		const pid, epoch = int64(7101), int16(0)
		legacyRecords(t, e, "t", pid, epoch, 0, "a", "b")

		cl := kclient(t, serve(t, e, nil))
		retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
		require.Equal(t, int16(0), retry.ErrorCode)
		assert.Equal(t, int64(0), retry.BaseOffset, "the retry is acknowledged where it was stored")
		next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
		require.Equal(t, int16(0), next.ErrorCode, "the producer's next batch is stored")
		assert.Equal(t, int64(2), next.BaseOffset)
		assert.Equal(t, int64(3), storedCount(t, e, "t"), "nothing stored twice")
	})
	t.Run("behind another producer's marked records", func(t *testing.T) {
		e := openEngine(t, nil)
		ctx := testCtx(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		const pid, other, epoch = int64(7102), int64(7103), int16(0)
		legacyRecords(t, e, "t", pid, epoch, 0, "a", "b")
		first := kclient(t, serve(t, e, nil))
		require.Equal(t, int16(0), produceRaw(ctx, t, first, "t", 0, rawBatch(other, epoch, 0, "x")).ErrorCode)

		// Another listener, as after a restart, knowing neither producer.
		cl := kclient(t, serve(t, e, nil))
		retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
		require.Equal(t, int16(0), retry.ErrorCode)
		assert.Equal(t, int64(0), retry.BaseOffset, "the retry is acknowledged where it was stored")
		assert.Equal(t, int64(3), storedCount(t, e, "t"), "nothing stored twice")
	})
}

// TestProduce_RebuildIgnoresUnmarkedRecordsAfterMarkedOnes: a record
// without a mark stored after one the listener marked is no previous
// version's: named as a producer's later record, it does not move the
// producer's state, even when the producer's own records are all
// unmarked.
func TestProduce_RebuildIgnoresUnmarkedRecordsAfterMarkedOnes(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, other, epoch = int64(7104), int64(7105), int16(0)
	legacyRecords(t, e, "t", pid, epoch, 0, "a", "b")
	first := kclient(t, serve(t, e, nil))
	require.Equal(t, int16(0), produceRaw(ctx, t, first, "t", 0, rawBatch(other, epoch, 0, "x")).ErrorCode)
	legacyRecords(t, e, "t", pid, epoch, 7, "forged")

	cl := kclient(t, serve(t, e, nil))
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), next.ErrorCode, "the producer's next batch is stored")
	assert.Equal(t, int64(4), next.BaseOffset)
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "the retry is acknowledged where it was stored")
	assert.Equal(t, int64(5), storedCount(t, e, "t"))
}
