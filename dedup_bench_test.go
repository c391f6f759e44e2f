package equeue_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
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

// BenchmarkSendDedup measures what a dedup window costs a send: 64
// senders each sending one message of 100 bytes with its own 36-byte ID at
// a time, under SyncNever and SyncAlways, to a 4-queue topic with a window of an hour
// (window=1h) and without one (window=none, the baseline: the same
// messages and IDs). Run with -benchtime Nx.
func BenchmarkSendDedup(b *testing.B) {
	for _, policy := range []equeue.SyncPolicy{equeue.SyncNever, equeue.SyncAlways} {
		for _, window := range []time.Duration{time.Hour, 0} {
			name := "window=1h"
			if window == 0 {
				name = "window=none"
			}
			benchSendDedup(b, policy, window, name)
		}
	}
}

func benchSendDedup(b *testing.B, policy equeue.SyncPolicy, window time.Duration, name string) {
	mode := "SyncNever/"
	if policy == equeue.SyncAlways {
		mode = "SyncAlways/"
	}
	{
		b.Run(mode+name, func(b *testing.B) {
			ctx := benchCtx(b)
			e := benchOpenEngine(b, b.TempDir(), &equeue.Options{Sync: policy})
			require.NoError(b, e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: benchQueues, DedupWindow: window}))
			p := benchProducer(b, e)
			body := benchBody(100)
			var (
				next atomic.Int64
				errs benchFirstErr
				wg   sync.WaitGroup
			)
			n := int64(b.N)
			b.ResetTimer()
			cpu := benchStartCPU()
			start := time.Now()
			for range 64 {
				wg.Go(func() {
					for !errs.failed.Load() {
						i := next.Add(1)
						if i > n {
							return
						}
						id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
						if _, err := p.Send(ctx, &equeue.Message{Topic: "d", ID: id, Body: body}); err != nil {
							errs.set(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			cpu.report(b, b.N)
			errs.check(b)
			benchReport(b, b.N, elapsed)
		})
	}
}
