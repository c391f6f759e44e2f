package kafka_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// rawBatch encodes values as one uncompressed v2 record batch of an
// idempotent producer (pid < 0: not idempotent).
func rawBatch(pid int64, epoch int16, seq int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		// Record.AppendTo writes Length as given: measure with 0 (one byte).
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1), FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000,
		ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq, NumRecords: int32(len(values)), Records: recs,
	}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

// produceRaw sends one Produce v9 request with a raw batch and returns the
// partition's answer.
func produceRaw(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, part int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = part, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestProduce_IdempotentRetryStoredOnce: an idempotent producer's batch sent
// again (as after a lost answer) is acknowledged with the first offsets and
// stored once; a gap in the sequence is refused and stores nothing.
func TestProduce_IdempotentRetryStoredOnce(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	first := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), first.ErrorCode)
	assert.Equal(t, int64(0), first.BaseOffset)
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(2), next.BaseOffset)

	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), retry.ErrorCode, "a duplicate is acknowledged")
	assert.Equal(t, int64(0), retry.BaseOffset, "with the offsets it was stored at")

	gap := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 5, "x"))
	assert.Equal(t, int16(45), gap.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER")
	old := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch-1, 3, "y"))
	assert.Equal(t, int16(47), old.ErrorCode, "INVALID_PRODUCER_EPOCH")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a", "b", "c"}, bodies)
}

// TestProduce_Codecs: franz-go produces with each codec; what is stored is
// the records, decompressed.
func TestProduce_Codecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"none", kgo.NoCompression()}, {"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, addr := setup(t, map[string]int{"t": 1})
			ctx := testCtx(t)
			cl := kclient(t, addr, kgo.DefaultProduceTopic("t"), kgo.ProducerBatchCompression(tc.codec), kgo.ProducerLinger(0))
			var rs []*kgo.Record
			for i := range 100 {
				rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "compressible value %03d %s", i, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")})
			}
			require.NoError(t, cl.ProduceSync(ctx, rs...).FirstErr())
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 1000})
			require.NoError(t, err)
			require.Len(t, res.Messages, 100)
			for i, m := range res.Messages {
				assert.Equal(t, string(rs[i].Value), string(m.Body))
			}
		})
	}
}

// TestProduce_BatchLargerThanOneStoreWrite: a record batch with more
// records than one Badger write holds is stored in order, in chunks, and
// acknowledged at its first offset.
func TestProduce_BatchLargerThanOneStoreWrite(t *testing.T) {
	e, err := equeue.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	addr := serve(t, e, nil)
	cl := kclient(t, addr)
	values := make([]string, 20_000)
	for i := range values {
		values[i] = fmt.Sprintf("r%05d", i)
	}
	small := produceRaw(ctx, t, cl, "big", 0, rawBatch(-1, -1, -1, "first"))
	require.Equal(t, int16(0), small.ErrorCode)
	big := produceRaw(ctx, t, cl, "big", 0, rawBatch(-1, -1, -1, values...))
	require.Equal(t, int16(0), big.ErrorCode, "RECORD_LIST_TOO_LARGE is 18")
	assert.Equal(t, int64(1), big.BaseOffset)
	next := int64(1)
	for next < 20_001 {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "big", Offset: next, Max: equeue.MaxPullBatch})
		require.NoError(t, err)
		require.NotEmpty(t, res.Messages)
		for _, m := range res.Messages {
			require.Equal(t, values[m.Offset-1], string(m.Body))
		}
		next = res.NextOffset
	}
	assert.Equal(t, int64(20_001), next)
}

// TestProduce_StoreFailures: a produce whose store write fails is answered
// with the retriable KAFKA_STORAGE_ERROR and stores nothing; one whose
// fsync fails (outcome unknown) gets the same code; a retry then succeeds.
func TestProduce_StoreFailures(t *testing.T) {
	mem := store.NewMemory()
	fs := faultstore.New(keepOpen{mem})
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, nil))

	fs.FailWrites(1)
	failed := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "a"))
	assert.Equal(t, int16(56), failed.ErrorCode, "KAFKA_STORAGE_ERROR")
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), ti.Queues[0].MaxOffset, "not stored")

	fs.FailSyncs(1)
	unknown := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "b"))
	assert.Equal(t, int16(56), unknown.ErrorCode, "KAFKA_STORAGE_ERROR")
	// The failed fsync stopped the engine's writes until it is reopened.
	stopped := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "c"))
	assert.Equal(t, int16(56), stopped.ErrorCode, "KAFKA_STORAGE_ERROR")
	require.ErrorIs(t, e.StoreFailure(), faultstore.ErrInjected)

	require.ErrorIs(t, e.Close(), equeue.ErrStoreFailed, "Close reports the failed fsync")
	e = openEngine(t, &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	cl = kclient(t, serve(t, e, nil))
	ok := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "c"))
	require.Equal(t, int16(0), ok.ErrorCode)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"b", "c"}, bodies, "the unknown outcome was in fact stored; the failed write was not")
}

// TestProduce_IdempotentUnknownOutcomeWithDedupWindow: after a failed fsync
// (outcome unknown) the idempotent producer's retry of the same batch is
// recognized by the topic's dedup window and stored once.
func TestProduce_IdempotentUnknownOutcomeWithDedupWindow(t *testing.T) {
	mem := store.NewMemory()
	fs := faultstore.New(keepOpen{mem})
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	cl := kclient(t, serve(t, e, nil))
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	fs.FailSyncs(1)
	unknown := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(56), unknown.ErrorCode, "KAFKA_STORAGE_ERROR: retry")
	// The failed fsync stopped the engine's writes: restart it (and the
	// listener, whose idempotence state is in memory); the dedup window,
	// stored, still knows the batch.
	require.ErrorIs(t, e.Close(), equeue.ErrStoreFailed, "Close reports the failed fsync")
	e = openEngine(t, &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	cl = kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "acknowledged at the offsets of the first try")
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(2), next.BaseOffset)

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a", "b", "c"}, bodies)
}

// keepOpen is a memory store that outlives the engines closing it, so a
// test can open an engine again on what the last one stored.
type keepOpen struct{ *store.Memory }

func (keepOpen) Close() error { return nil }

// TestProduce_IdempotentNewEpochStartsAtSequenceZero: a producer's first
// batch in a new epoch must start at sequence 0, as Kafka has it. When the
// new epoch's first batch fails (a store failure, retriable) the batch the
// producer pipelined after it must be refused too, not stored ahead of it:
// its retry would then be refused as out of order, and the records stored
// out of their order.
func TestProduce_IdempotentNewEpochStartsAtSequenceZero(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, nil))
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)

	// The producer bumps its epoch (KIP-360) and resets its sequences.
	epoch++
	fs.FailWrites(1)
	failed := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "c"))
	require.Equal(t, int16(56), failed.ErrorCode, "KAFKA_STORAGE_ERROR")
	ahead := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 1, "d"))
	assert.Equal(t, int16(45), ahead.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER: the new epoch starts at 0")

	// The producer sends both again, in order.
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "c"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(2), retry.BaseOffset)
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 1, "d"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(3), next.BaseOffset)

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a", "b", "c", "d"}, bodies)
}
