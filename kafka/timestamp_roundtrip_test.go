package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchBatches fetches partition 0 of topic from offset 0 and returns its
// record batches, decoded.
func fetchBatches(t *testing.T, addr, topic string) []kmsg.RecordBatch {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(testCtx(t), kclient(t, addr))
	require.NoError(t, err)
	p := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(0), p.ErrorCode)
	var batches []kmsg.RecordBatch
	for raw := p.RecordBatches; len(raw) > 0; {
		var rb kmsg.RecordBatch
		require.NoError(t, rb.ReadFrom(raw))
		raw = raw[12+rb.Length:]
		batches = append(batches, rb)
	}
	return batches
}

// TestFetch_PreEpochBatchCarriesItsMaxTimestamp: records produced with
// times before 1970 are fetched with the same milliseconds, and their
// batch's MaxTimestamp is the largest of them (Sarama hands it out as
// BlockTimestamp), not -1: a batch's largest time started at -1, so
// times below it were never taken. The batch's base timestamp is 0, each
// record's delta from it its time.
func TestFetch_PreEpochBatchCarriesItsMaxTimestamp(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	born := time.Date(1969, 7, 20, 20, 17, 40, 0, time.UTC).UnixMilli()
	require.Equal(t, int16(0), produceRaw(testCtx(t), t, kclient(t, addr), "t", 0, timestampedBatch(born, 0, 5)).ErrorCode)

	batches := fetchBatches(t, addr, "t")
	require.Len(t, batches, 1)
	rb := batches[0]
	assert.Equal(t, int64(0), rb.FirstTimestamp, "a base sarama reads, not one before 1970 (TestSarama_FetchedTimesBeforeNineteenSeventy)")
	assert.Equal(t, born+5, rb.MaxTimestamp, "the batch's largest time")
	var recs []int64
	raw := rb.Records
	for range rb.NumRecords {
		var r kmsg.Record
		require.NoError(t, r.ReadFrom(raw))
		n := len(r.AppendTo(nil))
		raw = raw[n:]
		recs = append(recs, rb.FirstTimestamp+r.TimestampDelta64)
	}
	assert.Equal(t, []int64{born, born + 5}, recs, "each record's time, to the millisecond")
}
