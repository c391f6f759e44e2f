package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_RebuildWithANewKeyReadsRecordsOfTheBuiltInKey: a listener
// that marked an idempotent producer's records with the built-in key (no
// Options.ProducerRecordKey) restarts with a key, and the producer, whose
// answer the restart lost, sends its batch again. Records marked with the
// built-in key below the partition's first record marked with the key are
// read as the producer's, as records without a mark are: the retry is
// acknowledged where it was stored, not stored twice. A native message
// marked with the built-in key after the first record marked with the key
// still is not.
func TestProduce_RebuildWithANewKeyReadsRecordsOfTheBuiltInKey(t *testing.T) {
	ctx := testCtx(t)
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	require.NoError(t, r.engine().CreateTopic(ctx, "t", 1))
	cl := kclient(t, r.addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
	cl.Close()

	r.stop()
	r.opts = &kafka.Options{ProducerRecordKey: []byte("a key of this deployment, new")}
	r.start()
	cl = kclient(t, r.addr)
	again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), again.ErrorCode)
	assert.Equal(t, int64(0), again.BaseOffset, "the retry is acknowledged where it was stored")
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), next.ErrorCode, "the producer's next batch is stored")
	assert.Equal(t, int64(2), next.BaseOffset)
	cl.Close()
	assert.Equal(t, int64(3), storedCount(t, r.engine(), "t"), "nothing stored twice")

	// Marked with the built-in key after a record marked with the key: a
	// native message, not the producer's.
	forged := &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, 9), Body: []byte("forged")}
	_, err = r.engine().Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{forged}})
	require.NoError(t, err)
	r.stop()
	r.start()
	cl = kclient(t, r.addr)
	got := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 3, "d"))
	require.Equal(t, int16(0), got.ErrorCode, "the producer's next batch is stored")
	assert.Equal(t, int64(4), got.BaseOffset)
}
