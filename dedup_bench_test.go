package equeue_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkDedupWindowMemory measures what a dedup window costs the host
// program's heap: it sends n messages of 100 bytes, each with its own
// 36-byte ID (a UUID's length), in SendBatch calls of 1,000 to a 4-queue
// topic with a window of an hour, on Badger with Options.MemoryBudget
// 48 MiB (so that Badger's own caches are small), then closes and
// reopens the engine. It runs the same with no window (window=none), the
// baseline: the difference is the window's. 100,000 messages by default;
// EQUEUE_BENCH_DEDUP_MSGS sets another count. Run it with -benchtime 1x.
//
// Metrics: heap-MB (live heap after the sends, after two collections),
// reopen-heap-MB (the same after a reopen), send-s and reopen-s (wall
// time), B/id (the heap difference over the sends, per message).
func BenchmarkDedupWindowMemory(b *testing.B) {
	n := 100_000
	if s := os.Getenv("EQUEUE_BENCH_DEDUP_MSGS"); s != "" {
		_, err := fmt.Sscan(s, &n)
		require.NoError(b, err)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, window := range []time.Duration{time.Hour, 0} {
		name := "window=1h"
		if window == 0 {
			name = "window=none"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				ctx := context.Background()
				dir := b.TempDir()
				opts := &equeue.Options{Sync: equeue.SyncNever, MemoryBudget: 48 << 20}
				e, err := equeue.Open(dir, opts)
				require.NoError(b, err)
				require.NoError(b, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 4, DedupWindow: window}))
				p, err := equeue.NewProducer(e, nil)
				require.NoError(b, err)
				before := heap()
				began := time.Now()
				batch := make([]*equeue.Message, 0, 1000)
				for i := range n {
					batch = append(batch, &equeue.Message{Topic: "t", ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Body: make([]byte, 100)})
					if len(batch) == cap(batch) || i == n-1 {
						_, err := p.SendBatch(ctx, batch)
						require.NoError(b, err)
						batch = batch[:0]
					}
				}
				sent := time.Since(began)
				after := heap()
				require.NoError(b, p.Close())
				require.NoError(b, e.Close())
				began = time.Now()
				e, err = equeue.Open(dir, opts)
				require.NoError(b, err)
				reopened := time.Since(began)
				reopenHeap := heap()
				require.NoError(b, e.Close())
				b.ReportMetric(float64(after)/1e6, "heap-MB")
				b.ReportMetric(float64(reopenHeap)/1e6, "reopen-heap-MB")
				b.ReportMetric(sent.Seconds(), "send-s")
				b.ReportMetric(reopened.Seconds(), "reopen-s")
				b.ReportMetric(float64(after-min(after, before))/float64(n), "B/id")
			}
		})
	}
}
