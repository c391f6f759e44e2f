package equeue_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// BenchmarkTopicLimits_Open measures what a MaxBytes costs an engine's
// open: the recount of the topic's records. The same Badger directory,
// holding one topic of EQUEUE_BENCH_OPEN_MSGS (default 200,000) 100-byte
// messages over 4 queues, is opened with the topic's MaxBytes unset
// ("plain") and set ("max-bytes"); "raw-read" reads the same records
// straight from the store, the baseline of the recount.
func BenchmarkTopicLimits_Open(b *testing.B) {
	n := 200_000
	if s := os.Getenv("EQUEUE_BENCH_OPEN_MSGS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	ctx := context.Background()
	dir := b.TempDir()
	opts := &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	e, err := equeue.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.CreateTopic(ctx, "t", 4); err != nil {
		b.Fatal(err)
	}
	body := make([]byte, 100)
	batch := make([]*equeue.Message, 1000)
	for i := range batch {
		batch[i] = &equeue.Message{Body: body}
	}
	for i := 0; i < n; i += len(batch) {
		if _, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: i / len(batch) % 4, Messages: batch}); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B, limits equeue.TopicLimits) {
		e, err := equeue.Open(dir, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := e.SetTopicLimits(ctx, "t", limits); err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e, err := equeue.Open(dir, opts)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := e.Close(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	}
	b.Run("plain", func(b *testing.B) { open(b, equeue.TopicLimits{}) })
	b.Run("max-bytes", func(b *testing.B) { open(b, equeue.TopicLimits{MaxBytes: 1 << 50}) })
	b.Run("raw-read", func(b *testing.B) {
		s, err := store.OpenBadger(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			var total int
			for q := uint32(0); q < 4; q++ {
				first, next, ok, err := s.Bounds(store.QueueID{Topic: 1, Queue: q})
				if err != nil || !ok {
					b.Fatal("no records in queue", q, err)
				}
				for from := first; from < next; {
					recs, err := s.Read(store.QueueID{Topic: 1, Queue: q}, from, next, 1024, 4<<20)
					if err != nil {
						b.Fatal(err)
					}
					for _, r := range recs {
						total += len(r.Value)
					}
					from = recs[len(recs)-1].Offset + 1
				}
			}
			if total == 0 {
				b.Fatal("read nothing")
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
}
