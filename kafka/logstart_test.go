package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestFetch_LogStartOffsetIsTheLowWatermark: Fetch answers the log start
// offset (the queue's low watermark, what retention left) for a fetch in
// range, one below it (OFFSET_OUT_OF_RANGE) and one at the end (a long
// poll), never -1 where the pull told it. (ListOffsets has no such field;
// a Produce answer's: TestProduce_LogStartOffsetIsTheLowWatermark.)
func TestFetch_LogStartOffsetIsTheLowWatermark(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 5}}))
	cl := kclient(t, serve(t, e, nil))
	for range 4 {
		msgs := make([]*equeue.Message, 5)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("v")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	var low, end int64
	require.Eventually(t, func() bool {
		ti, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		low, end = ti.Queues[0].MinOffset, ti.Queues[0].MaxOffset
		return low > 0
	}, 10*time.Second, 10*time.Millisecond, "retention moves the low watermark")

	fetch := func(off int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset, fp.CurrentLeaderEpoch = 0, off, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0]
	}
	for name, off := range map[string]int64{"in range": low, "below the start": 0, "at the end": end} {
		p := fetch(off)
		assert.Equal(t, low, p.LogStartOffset, name)
	}
}
