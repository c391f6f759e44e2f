package equeue_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkDelayLateness measures how late a delayed message becomes visible
// after its delivery time on an otherwise idle engine, with no other delayed
// message pending and with a million pending (due in an hour): due messages
// are found through the time-ordered index, so the backlog must not matter.
func BenchmarkDelayLateness(b *testing.B) {
	for _, pending := range []int{0, 1_000_000} {
		b.Run(map[int]string{0: "pending=0", 1_000_000: "pending=1M"}[pending], func(b *testing.B) {
			ctx := context.Background()
			e, err := equeue.Open(b.TempDir(), &equeue.Options{Sync: equeue.SyncNever})
			require.NoError(b, err)
			defer e.Close()
			require.NoError(b, e.CreateTopic(ctx, "t", 1))
			require.NoError(b, e.CreateTopic(ctx, "later", 1))
			p, _ := equeue.NewProducer(e, nil)
			batch := make([]*equeue.Message, 1000)
			for sent := 0; sent < pending; sent += len(batch) {
				for i := range batch {
					batch[i] = &equeue.Message{Topic: "later", Body: []byte("pending"), Delay: time.Hour}
				}
				_, err := p.SendBatch(ctx, batch)
				require.NoError(b, err)
			}
			var late []time.Duration
			next := int64(0)
			b.ResetTimer()
			for b.Loop() {
				due := time.Now().Add(50 * time.Millisecond)
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x"), DeliverAt: due})
				require.NoError(b, err)
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: next, Wait: 5 * time.Second})
				require.NoError(b, err)
				require.Len(b, res.Messages, 1)
				late = append(late, time.Since(due))
				next++
			}
			slices.Sort(late)
			b.ReportMetric(float64(late[len(late)/2].Microseconds())/1000, "p50-late-ms")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds())/1000, "p99-late-ms")
		})
	}
}
