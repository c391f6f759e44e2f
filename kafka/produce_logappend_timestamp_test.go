package kafka_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_LogAppendTimeTakesAnyRecordTimestamp: with
// Options.LogAppendTime the listener answers every record with the time it
// stored it, as a Kafka topic of message.timestamp.type LogAppendTime
// does, which therefore does not look at the producer's timestamps at all:
// one a BornAt cannot hold is stored, with the time of the append, rather
// than the batch refused INVALID_TIMESTAMP.
func TestProduce_LogAppendTimeTakesAnyRecordTimestamp(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, &kafka.Options{LogAppendTime: true}))
	for _, b := range [][]byte{
		timestampedBatch(math.MaxInt64, 0),
		timestampedBatch(math.MinInt64, 0),
		timestampedBatch(math.MaxInt64-1, 0, 10),
	} {
		got := produceRaw(ctx, t, cl, "t", 0, b)
		assert.Equal(t, int16(0), got.ErrorCode)
		assert.Greater(t, got.LogAppendTime, int64(0), "answered with the time of the append")
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 4)
	for _, m := range res.Messages {
		assert.Greater(t, m.BornAt.Year(), 2000, "the time of the append")
	}
}
