package equeue

import (
	"testing"
	"time"
)

// BenchmarkRecordCodec encodes, seals and decodes a record of a message
// sent with only a body (the engine generating its ID and born-at), in the
// compact format (v2) and in the version-1 format it replaces, in one run.
// It reports the encoded size as "record-B".
func BenchmarkRecordCodec(b *testing.B) {
	for _, size := range []int{100, 1024} {
		body := make([]byte, size)
		for _, f := range []struct {
			name   string
			encode func(m *Message, id string, born time.Time) []byte
		}{{"v1", encodeRecordV1}, {"v2", encodeRecord}} {
			b.Run(f.name+"/body="+itoa(size), func(b *testing.B) {
				ids := newIDSource()
				n := 0
				b.SetBytes(int64(size))
				for b.Loop() {
					now := time.Now()
					id, born := ids.next(now)
					rec := f.encode(&Message{Body: body}, id, born)
					sealRecord(rec, now)
					var m Message
					if err := decodeRecordTo(&m, rec, nil); err != nil {
						b.Fatal(err)
					}
					n = len(rec)
				}
				b.ReportMetric(float64(n), "record-B")
			})
		}
	}
}

func itoa(n int) string {
	if n == 1024 {
		return "1KiB"
	}
	return "100B"
}
