package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
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

// listOffset asks for one partition's offset at timestamp ts. The request
// goes to the listener as it is: a client's sharding would look the topic
// up first and, once its metadata says the topic is gone (a deleted one,
// after a refresh whose timing the test does not control), fail the
// request without sending it.
func listOffset(t *testing.T, cl *kgo.Client, topic string, part int32, ts int64) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = part, ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kr, err := cl.SeedBrokers()[0].Request(testCtx(t), req)
	require.NoError(t, err)
	resp := kr.(*kmsg.ListOffsetsResponse)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	return resp.Topics[0].Partitions[0]
}

// TestListOffsets_MaxTimestampIsTheLargestTimestamp: timestamp -3
// (MAX_TIMESTAMP, KIP-734) answers the offset and timestamp of the record
// with the largest timestamp, the first of them when several share it, as
// Kafka does; not the last record, whose producer time may be older.
func TestListOffsets_MaxTimestampIsTheLargestTimestamp(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	t0 := time.UnixMilli(1_700_000_000_000)
	var msgs []*equeue.Message
	for _, d := range []time.Duration{3, 10, 10, 1} {
		msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: t0.Add(d * time.Second)})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	cl := kclient(t, addr)

	p := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(1), p.Offset, "the first record of the largest timestamp")
	assert.Equal(t, t0.Add(10*time.Second).UnixMilli(), p.Timestamp)

	empty := listOffset(t, cl, "t", 1, -3)
	require.Equal(t, int16(0), empty.ErrorCode)
	assert.Equal(t, int64(-1), empty.Offset, "an empty partition has none")
	assert.Equal(t, int64(-1), empty.Timestamp)
}

// TestListOffsets_MaxTimestampWithLogAppendTime: with LogAppendTime the
// timestamps are the times the engine stored the records, which grow with
// the offset: -3 answers the first record stored in the last record's
// millisecond, with that time.
func TestListOffsets_MaxTimestampWithLogAppendTime(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	cl := kclient(t, serve(t, e, &kafka.Options{LogAppendTime: true}))
	t0 := time.UnixMilli(1_700_000_000_000)
	for i := range 20 {
		// Producer times that fall: they are not what counts here.
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("v"), BornAt: t0.Add(-time.Duration(i) * time.Second)}}})
		require.NoError(t, err)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
	require.NoError(t, err)
	require.Len(t, res.Messages, 20)
	last := res.Messages[19].StoredAt.UnixMilli()
	first := 0
	for res.Messages[first].StoredAt.UnixMilli() != last {
		first++
	}

	p := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(first), p.Offset)
	assert.Equal(t, last, p.Timestamp)
}
