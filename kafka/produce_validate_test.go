package kafka_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// Kafka's produce error codes these tests expect.
const (
	codeCorruptMessage int16 = 2
	codeInvalidRecord  int16 = 87
)

// recordBody is one v2 record's body (without its length): attributes,
// timestamp and offset deltas, a null key, value and headers as given
// (count first, so a test can write a count that does not match).
func recordBody(offsetDelta int64, value string, headers ...[]byte) []byte {
	b := []byte{0} // attributes
	b = binary.AppendVarint(b, 0)
	b = binary.AppendVarint(b, offsetDelta)
	b = binary.AppendVarint(b, -1) // null key
	b = binary.AppendVarint(b, int64(len(value)))
	b = append(b, value...)
	for _, h := range headers {
		b = append(b, h...)
	}
	if len(headers) == 0 {
		b = binary.AppendVarint(b, 0)
	}
	return b
}

// framed prefixes a record body with its length as a varint.
func framed(body []byte) []byte {
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// batchHeader are the fields of a v2 record batch header a test sets.
type batchHeader struct {
	attrs           int16
	lastOffsetDelta int32
	pid             int64
	seq             int32
	count           int32
}

// rawBatchOf is a v2 record batch with the header given around the record
// bytes recs, as they are, with a CRC that matches.
func rawBatchOf(h batchHeader, recs []byte) []byte {
	b := kmsg.RecordBatch{
		Magic: 2, Attributes: h.attrs, LastOffsetDelta: h.lastOffsetDelta,
		FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_000,
		ProducerID: h.pid, ProducerEpoch: -1, FirstSequence: h.seq, NumRecords: h.count, Records: recs,
	}
	if h.pid >= 0 {
		b.ProducerEpoch = 0
	}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// nonIdempotent is the header of a batch of n records of no producer.
func nonIdempotent(n int32) batchHeader {
	return batchHeader{lastOffsetDelta: n - 1, pid: -1, seq: -1, count: n}
}

// storedCount is how many messages partition 0 of topic holds.
func storedCount(t *testing.T, e *equeue.Engine, topic string) int64 {
	t.Helper()
	ti, err := e.Topic(testCtx(t), topic)
	require.NoError(t, err)
	return ti.Queues[0].MaxOffset - ti.Queues[0].MinOffset
}

// TestProduce_OneRecordBatchPerPartition: a Produce v3+ request carries
// exactly one record batch per partition, as Kafka's ProduceRequest and
// LogValidator have it; a partition with more is refused whole with
// INVALID_RECORD, which clients do not retry, and nothing of it is stored.
// Before, each batch was stored with its own append: a failure of a later
// one (here a record larger than the engine takes) was answered with an
// error while the batches before it stayed stored, so a client retrying
// stored them twice; and the answer's base offset was the first batch's.
func TestProduce_OneRecordBatchPerPartition(t *testing.T) {
	e := openEngine(t, &equeue.Options{MaxMessageSize: 1 << 10})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, nil))

	one := func(v string) []byte { return rawBatch(-1, -1, -1, v) }
	for name, records := range map[string][]byte{
		"two good batches":             append(one("a"), one("b")...),
		"the second refused by engine": append(one("a"), one(strings.Repeat("x", 2<<10))...),
		"the second with a bad CRC":    append(one("a"), flipLast(one("b"))...),
	} {
		got := produceRaw(ctx, t, cl, "t", 0, records)
		assert.Equal(t, codeInvalidRecord, got.ErrorCode, "%s: INVALID_RECORD", name)
		assert.Zero(t, storedCount(t, e, "t"), "%s: nothing stored", name)
	}
	ok := produceRaw(ctx, t, cl, "t", 0, one("c"))
	require.Equal(t, int16(0), ok.ErrorCode)
	assert.Equal(t, int64(0), ok.BaseOffset)
}

// flipLast is raw with its last byte changed, so its CRC no longer matches.
func flipLast(raw []byte) []byte {
	raw[len(raw)-1] ^= 1
	return raw
}

// TestProduce_MalformedBatchesAreRefusedAsKafkaDoes: a record batch is
// checked as Kafka's broker checks it (DefaultRecordBatch, DefaultRecord,
// LogValidator.validateBatch) before anything is stored: a damaged batch
// (too short for its header, a CRC that does not match) is answered with
// CORRUPT_MESSAGE, which clients retry; a batch whose content contradicts
// itself is answered with INVALID_RECORD, which they do not. Nothing of a
// refused batch is stored.
func TestProduce_MalformedBatchesAreRefusedAsKafkaDoes(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	two := append(framed(recordBody(0, "a")), framed(recordBody(1, "b"))...)
	header := func(k, v string) []byte {
		h := binary.AppendVarint(nil, int64(len(k)))
		h = append(h, k...)
		h = binary.AppendVarint(h, int64(len(v)))
		return append(h, v...)
	}
	short := rawBatchOf(nonIdempotent(1), framed(recordBody(0, "a")))
	binary.BigEndian.PutUint32(short[8:], 40) // a length shorter than the header
	for _, tc := range []struct {
		name  string
		batch []byte
		code  int16
	}{
		{"no batch", nil, codeInvalidRecord},
		{"length shorter than a header", short, codeCorruptMessage},
		{"CRC mismatch", flipLast(rawBatchOf(nonIdempotent(2), two)), codeCorruptMessage},
		{"count of zero", rawBatchOf(batchHeader{lastOffsetDelta: 1, pid: -1, seq: -1, count: 0}, two), codeInvalidRecord},
		{"negative count", rawBatchOf(batchHeader{lastOffsetDelta: 1, pid: -1, seq: -1, count: -1}, two), codeInvalidRecord},
		{"count larger than the records", rawBatchOf(batchHeader{lastOffsetDelta: 2, pid: -1, seq: -1, count: 3}, two), codeInvalidRecord},
		{"count smaller than the records (bytes left over)", rawBatchOf(nonIdempotent(1), two), codeInvalidRecord},
		{"trailing bytes after the records", rawBatchOf(nonIdempotent(2), append(two, 0, 0)), codeInvalidRecord},
		{"last offset delta not count-1", rawBatchOf(batchHeader{lastOffsetDelta: 0, pid: -1, seq: -1, count: 2}, two), codeInvalidRecord},
		{"record length past the batch", rawBatchOf(nonIdempotent(1), append(binary.AppendVarint(nil, 100), recordBody(0, "a")...)), codeInvalidRecord},
		{"negative record length", rawBatchOf(nonIdempotent(1), append(binary.AppendVarint(nil, -3), recordBody(0, "a")...)), codeInvalidRecord},
		{"record longer than its fields", rawBatchOf(nonIdempotent(1), framed(append(recordBody(0, "a"), 0))), codeInvalidRecord},
		{"negative header count", rawBatchOf(nonIdempotent(1), framed(recordBody(0, "a", binary.AppendVarint(nil, -1)))), codeInvalidRecord},
		{"negative header key length", rawBatchOf(nonIdempotent(1), framed(recordBody(0, "a", binary.AppendVarint(nil, 1), binary.AppendVarint(nil, -1), binary.AppendVarint(nil, 0)))), codeInvalidRecord},
		{"header count past the record", rawBatchOf(nonIdempotent(1), framed(recordBody(0, "a", binary.AppendVarint(nil, 2), header("k", "v")))), codeInvalidRecord},
		{"control batch", rawBatchOf(batchHeader{attrs: 0x20, pid: -1, seq: -1, count: 1}, framed(recordBody(0, "a"))), codeInvalidRecord},
		{"producer ID with a negative sequence", rawBatchOf(batchHeader{pid: 1, seq: -1, count: 1}, framed(recordBody(0, "a"))), codeInvalidRecord},
	} {
		got := produceRaw(ctx, t, cl, "t", 0, tc.batch)
		assert.Equal(t, tc.code, got.ErrorCode, tc.name)
		assert.Zero(t, storedCount(t, e, "t"), "%s: nothing stored", tc.name)
	}

	// The same records, consistent, are stored, headers and all.
	ok := rawBatchOf(nonIdempotent(2), append(framed(recordBody(0, "a", binary.AppendVarint(nil, 1), header("k", "v"))), framed(recordBody(1, "b"))...))
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, ok).ErrorCode)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
	assert.Equal(t, "a", string(res.Messages[0].Body))
	assert.Equal(t, map[string]string{"k": "v"}, res.Messages[0].Properties)
	assert.Equal(t, "b", string(res.Messages[1].Body))
}

// TestProduce_ChunkFailureSaysWhatWasStored: a batch larger than one store
// write is stored in chunks; when a chunk fails after others were stored,
// the answer carries the failure's code and an error message that says
// which of the batch's records were stored, so the client can tell the
// stored records from the others (Kafka stores a batch whole and has no
// answer for that). Before, the answer was the code alone, as if nothing
// had been stored.
func TestProduce_ChunkFailureSaysWhatWasStored(t *testing.T) {
	fs := faultstore.New(store.NewMemoryWithLimits(store.Limits{MaxEntries: 16}))
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, nil))
	failSecondWrite(fs)
	values := numberedValues(40)
	got := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, values...))
	assert.Equal(t, int16(56), got.ErrorCode, "KAFKA_STORAGE_ERROR")
	stored := storedCount(t, e, "t")
	require.Positive(t, stored, "the first chunk was stored")
	require.Less(t, stored, int64(len(values)))
	require.NotNil(t, got.ErrorMessage, "the answer says what was stored")
	assert.Contains(t, *got.ErrorMessage, fmt.Sprintf("only the first %d of the batch's %d records were stored, from offset 0", stored, len(values)))
}

// failSecondWrite makes the second store write of records fail (and store
// nothing): a batch stored in chunks fails after its first.
func failSecondWrite(fs *faultstore.FS) {
	var appends atomic.Int32
	fs.OnWrite(func(b *store.Batch) error {
		if len(b.Entries) > 0 && appends.Add(1) == 2 {
			return faultstore.ErrInjected
		}
		return nil
	})
}

// numberedValues returns n values "r00", "r01", ...
func numberedValues(n int) []string {
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("r%02d", i)
	}
	return values
}
