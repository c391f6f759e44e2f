package kafka_test

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// codeInvalidTimestamp is Kafka's INVALID_TIMESTAMP.
const codeInvalidTimestamp int16 = 32

// timestampedBatch is a v2 record batch of one record a delta, whose
// timestamps are first plus each delta, with a CRC that matches.
func timestampedBatch(first int64, deltas ...int64) []byte {
	var recs []byte
	for i, d := range deltas {
		r := kmsg.Record{TimestampDelta64: d, OffsetDelta: int32(i), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(deltas) - 1), FirstTimestamp: first, MaxTimestamp: first,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(deltas)), Records: recs,
	}
	b.Length = int32(49 + len(recs))
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestProduce_TimestampOutsideWhatTheEngineHolds: a record's timestamp
// (Unix milliseconds, any int64 on the wire) that a message's BornAt cannot
// hold (before 1678 or after 2262, the range of int64 Unix nanoseconds), or
// whose first timestamp plus delta overflows, refuses the whole batch with
// INVALID_TIMESTAMP and stores nothing. Before, a timestamp that summed
// past MaxInt64, or was before 1678, was stored silently as the time of the
// append, one after 2262 was answered INVALID_RECORD, and one before 1970
// was stored as the time of the append.
func TestProduce_TimestampOutsideWhatTheEngineHolds(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	for _, tc := range []struct {
		name   string
		first  int64
		deltas []int64
	}{
		{"MaxInt64 ms", math.MaxInt64, []int64{0}},
		{"after 2262", time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), []int64{0}},
		{"before 1678", time.Date(1677, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), []int64{0}},
		{"MinInt64 ms", math.MinInt64, []int64{0}},
		{"first plus delta overflows", math.MaxInt64 - 1, []int64{0, 10}},
		{"second record's delta far back", 1_700_000_000_000, []int64{0, -1_800_000_000_000_000}},
		{"negative, not -1", -1_000_000_000_000_000, []int64{0}},
	} {
		got := produceRaw(ctx, t, cl, "t", 0, timestampedBatch(tc.first, tc.deltas...))
		assert.Equal(t, codeInvalidTimestamp, got.ErrorCode, "%s: INVALID_TIMESTAMP", tc.name)
		assert.Equal(t, int64(-1), got.BaseOffset, tc.name)
		if assert.NotNil(t, got.ErrorMessage, tc.name) {
			assert.Contains(t, *got.ErrorMessage, "timestamp", tc.name)
		}
		assert.Zero(t, storedCount(t, e, "t"), "%s: nothing stored", tc.name)
	}

	// Timestamps the engine holds are stored as sent, before 1970 too;
	// -1 (Kafka's "no timestamp") and 0 get the time of the append, as
	// before.
	born := time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC).UnixMilli()
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, timestampedBatch(born, 0, 1)).ErrorCode)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, timestampedBatch(-2, 0)).ErrorCode)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, timestampedBatch(-1, 0)).ErrorCode)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, timestampedBatch(0, 0)).ErrorCode)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 5)
	assert.Equal(t, born, res.Messages[0].BornAt.UnixMilli())
	assert.Equal(t, born+1, res.Messages[1].BornAt.UnixMilli())
	assert.Equal(t, int64(-2), res.Messages[2].BornAt.UnixMilli())
	assert.False(t, res.Messages[3].BornAt.IsZero(), "no timestamp: the engine's")
	assert.Greater(t, res.Messages[3].BornAt.Year(), 2000)
	assert.Greater(t, res.Messages[4].BornAt.Year(), 2000, "0: the engine's")
}
