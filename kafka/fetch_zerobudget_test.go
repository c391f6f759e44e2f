package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestFetch_ZeroMaxBytesReturnsTheFirstMessageOnly: a fetch whose
// MaxBytes is 0 (a client's fetch.max.bytes=0) is answered as Kafka
// answers it, with the first message of the first partition that has one
// (KIP-74: so that the consumer moves on) and nothing more, not as if it
// set no bound: a client sizes what it takes by that bound.
func TestFetch_ZeroMaxBytesReturnsTheFirstMessageOnly(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	for q := range 2 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}})
		require.NoError(t, err)
	}
	ps := fetchTwoPartitions(ctx, t, addr, 0)
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(ps[0].RecordBatches))
	assert.Equal(t, int32(1), b.NumRecords, "the first message only")
	assert.Equal(t, int64(0), b.FirstOffset)
	assert.Len(t, ps[0].RecordBatches, 12+int(b.Length), "one batch")
	assert.Empty(t, ps[1].RecordBatches, "no room left")
	for _, p := range ps {
		assert.Equal(t, int16(0), p.ErrorCode)
		assert.Equal(t, int64(3), p.HighWatermark)
	}
}
