package kafka

import (
	"strconv"
	"testing"

	"github.com/equeue-go/equeue"
)

// BenchmarkSetIDs names the records of a batch of 100 small records of
// an idempotent producer: "plain" as listeners before marks did, "marked"
// with the mark each ID now ends with (recordMarks.setIDs). Its
// allocs/op, per batch, show what the mark adds per record.
func BenchmarkSetIDs(b *testing.B) {
	batch := &producedBatch{producerID: 1_700_000_000_000_000, firstSeq: 1000}
	for range 100 {
		batch.msgs = append(batch.msgs, &equeue.Message{Body: []byte("v")})
	}
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			prefix := "kafka-" + strconv.FormatInt(batch.producerID, 10) + "-" + strconv.Itoa(int(batch.producerEpoch)) + "-" + strconv.Itoa(3) + "-"
			for i, m := range batch.msgs {
				m.ID = prefix + strconv.Itoa(int(seqAt(batch, i)))
			}
		}
	})
	b.Run("marked", func(b *testing.B) {
		k := newRecordMarks(nil)
		b.ReportAllocs()
		for range b.N {
			k.setIDs(batch, "bench-topic", 3)
		}
	})
}
