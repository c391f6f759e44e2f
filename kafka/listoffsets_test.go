package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestListOffsets_ByTimeWithNoMessageAtOrAfter: a time after every
// message, and any time in an empty partition, is answered as Kafka does,
// with offset -1 and timestamp -1 ("no such message"), not with the end
// offset and timestamp -1, which the Java client's offsetsForTimes cannot
// hold (OffsetAndTimestamp refuses a negative timestamp).
func TestListOffsets_ByTimeWithNoMessageAtOrAfter(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	for _, b := range []string{"a", "b"} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(b)}}})
		require.NoError(t, err)
	}
	cl := kclient(t, addr)
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "t"
	future := time.Now().Add(time.Hour).UnixMilli()
	for p, ts := range []int64{future, 0} { // partition 1 is empty
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p), ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 2)
	for _, p := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", p.Partition)
		assert.Equal(t, int64(-1), p.Offset, "partition %d: offset", p.Partition)
		assert.Equal(t, int64(-1), p.Timestamp, "partition %d: timestamp", p.Partition)
	}

	// A time at or before the first message still finds it.
	req.Topics[0].Partitions = req.Topics[0].Partitions[:1]
	req.Topics[0].Partitions[0].Timestamp = 0
	resp, err = req.RequestWith(ctx, cl)
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(0), p.Offset)
	assert.Positive(t, p.Timestamp)
}
