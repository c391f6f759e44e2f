package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkPullHeadAfterRetention compares pulls at the head of a queue on
// a fresh queue with pulls after a million older messages were deleted by
// retention: the deleted range must not slow reads at the head.
func BenchmarkPullHeadAfterRetention(b *testing.B) {
	const deleted = 1_000_000
	for _, tc := range []struct {
		name    string
		deleted int
	}{{"fresh", 0}, {"after-1M-deleted", deleted}} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			e, err := equeue.Open(b.TempDir(), &equeue.Options{Sync: equeue.SyncNever, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(b, err)
			defer e.Close()
			require.NoError(b, e.CreateTopic(ctx, "t", 1))
			if tc.deleted > 0 {
				fillQueue(b, e, "t", tc.deleted)
				time.Sleep(10 * time.Millisecond)
				mark := time.Now()
				time.Sleep(10 * time.Millisecond)
				fillQueue(b, e, "t", 10_000)
				res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(mark)})
				require.NoError(b, err)
				require.Equal(b, int64(tc.deleted), res.Deleted)
			} else {
				fillQueue(b, e, "t", 10_000)
			}
			info, err := e.Topic(ctx, "t")
			require.NoError(b, err)
			head := info.Queues[0].MinOffset
			b.ResetTimer()
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				off := head + int64(i%300)*32
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off})
				if err != nil || len(res.Messages) != 32 {
					b.Fatalf("pull at %d: %v, %d messages", off, err, len(res.Messages))
				}
			}
			b.ReportMetric(float64(b.N*32)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
