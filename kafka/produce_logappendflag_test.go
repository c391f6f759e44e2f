package kafka_test

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/kafka"
)

// logAppendTimeFlag is the timestamp type bit of a v2 batch's attributes.
const logAppendTimeFlag = 0x08

// TestProduce_LogAppendTimeFlagIsRefused: a producer may not send a batch
// whose timestamp type is LogAppendTime (the broker sets it); Kafka's
// LogValidator refuses it with INVALID_TIMESTAMP ("Producer should not set
// timestamp type to LogAppendTime"), and stores nothing of it. It was
// stored, its records' times taken as create times. With
// Options.LogAppendTime too: the flag is the broker's to set.
func TestProduce_LogAppendTimeFlagIsRefused(t *testing.T) {
	for _, logAppend := range []bool{false, true} {
		e := openEngine(t, nil)
		ctx := testCtx(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		cl := kclient(t, serve(t, e, &kafka.Options{LogAppendTime: logAppend}))
		for _, b := range [][]byte{
			rawBatchOf(batchHeader{attrs: logAppendTimeFlag, lastOffsetDelta: 1, pid: -1, seq: -1, count: 2}, append(framed(recordBody(0, "a")), framed(recordBody(1, "b"))...)),
			withAttrs(timestampedBatch(-1, 0), logAppendTimeFlag),
		} {
			got := produceRaw(ctx, t, cl, "t", 0, b)
			assert.Equal(t, codeInvalidTimestamp, got.ErrorCode, "LogAppendTime listener: %v", logAppend)
			if assert.NotNil(t, got.ErrorMessage) {
				assert.Contains(t, *got.ErrorMessage, "LogAppendTime")
			}
			assert.Equal(t, int64(-1), got.BaseOffset)
		}
		assert.Zero(t, storedCount(t, e, "t"), "nothing stored (LogAppendTime listener: %v)", logAppend)

		// The same records as CreateTime are stored.
		got := produceRaw(ctx, t, cl, "t", 0, rawBatchOf(nonIdempotent(2), append(framed(recordBody(0, "a")), framed(recordBody(1, "b"))...)))
		assert.Equal(t, int16(0), got.ErrorCode)
		assert.Equal(t, int64(2), storedCount(t, e, "t"))
	}
}

// withAttrs sets a v2 batch's attributes and its CRC again.
func withAttrs(raw []byte, attrs uint16) []byte {
	binary.BigEndian.PutUint16(raw[21:], attrs)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
