package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestFetch_StopsAtARecordOfANewerFormat: a Kafka fetch does not move a
// consumer past a record of a format version the engine cannot read: it
// returns the records before it, and a fetch from its offset answers a
// retriable error (KAFKA_STORAGE_ERROR) with no records, so clients retry
// there until an engine that reads it serves the partition.
func TestFetch_StopsAtARecordOfANewerFormat(t *testing.T) {
	ctx := testCtx(t)
	fs := faultstore.New(store.NewMemory())
	fs.OnWrite(faultstore.NewerFormat)
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("before")}, {Body: faultstore.NewerFormatBody}, {Body: []byte("after")},
	}})
	require.NoError(t, err)
	c := kclient(t, serve(t, e, nil))
	fetch := func(offset int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset, fp.PartitionMaxBytes = offset, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, c)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0]
	}

	p := fetch(0)
	require.Equal(t, int16(0), p.ErrorCode)
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(p.RecordBatches))
	assert.Equal(t, int64(0), b.FirstOffset)
	assert.Equal(t, int32(1), b.NumRecords, "the record before it")
	assert.Equal(t, int32(0), b.LastOffsetDelta, "the batch does not move the consumer past it")
	assert.Equal(t, len(p.RecordBatches), 12+int(b.Length), "one batch")

	p = fetch(1)
	assert.Equal(t, kerr.KafkaStorageError.Code, p.ErrorCode)
	assert.True(t, kerr.IsRetriable(kerr.ErrorForCode(p.ErrorCode)))
	assert.Empty(t, p.RecordBatches)
	assert.Zero(t, e.Stats().CorruptRecords)
}
