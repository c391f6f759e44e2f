package store_test

import (
	"sync"
	"testing"

	"github.com/equeue-go/equeue/store"
)

// BenchmarkWrite_BesideBadgerSyncs writes one record of 4 KiB a batch, a
// value above Badger's ValueThreshold (1 KiB): it goes to the value log, so
// each Sync is Badger's own, which a Write waits for when it commits
// (rotateMu). In "syncLoop" a goroutine syncs the store over and over
// meanwhile; "alone" has no Sync, for comparison. Reported: the Writes'
// ns/op and the Syncs made.
func BenchmarkWrite_BesideBadgerSyncs(b *testing.B) {
	value := make([]byte, 4<<10)
	for _, loop := range []bool{true, false} {
		name := map[bool]string{true: "syncLoop", false: "alone"}[loop]
		b.Run(name, func(b *testing.B) {
			s, err := store.OpenBadger(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer closeBench(b, s)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var syncs int
			if loop {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := s.Sync(); err != nil {
							b.Error(err)
							return
						}
						syncs++
					}
				}()
			}
			q := store.QueueID{Topic: 1}
			batch := &store.Batch{Entries: make([]store.Entry, 1)}
			var off uint64
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				batch.Entries[0] = store.Entry{Queue: q, Offset: off, Value: value}
				off++
				if err := s.Write(batch); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(syncs), "syncs")
		})
	}
}
