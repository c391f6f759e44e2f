package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkSchedulerMemoryPending measures, on the memory store, how long
// the delay scheduler takes to make 2,000 due messages visible, with no
// other delayed message pending and with 200,000 pending (due in an hour).
// The scheduler's scan stops at the first message not yet due, so the
// backlog should not matter. ms/2000-due is from the delivery time to the
// last of the 2,000 being readable.
func BenchmarkSchedulerMemoryPending(b *testing.B) {
	const due, batch = 2000, 500
	for _, pending := range []int{0, 200_000} {
		name := map[int]string{0: "pending=0", 200_000: "pending=200k"}[pending]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			e, err := equeue.Open("", &equeue.Options{InMemory: true, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(b, err)
			defer func() { require.NoError(b, e.Close()) }()
			require.NoError(b, e.CreateTopic(ctx, "t", 1))
			require.NoError(b, e.CreateTopic(ctx, "later", 1))
			p, err := equeue.NewProducer(e, nil)
			require.NoError(b, err)
			defer func() { _ = p.Close() }()
			msgs := make([]*equeue.Message, batch)
			for sent := 0; sent < pending; sent += batch {
				for i := range msgs {
					msgs[i] = &equeue.Message{Topic: "later", Body: []byte("pending"), Delay: time.Hour}
				}
				_, err := p.SendBatch(ctx, msgs)
				require.NoError(b, err)
			}
			var total time.Duration
			next := int64(0)
			for b.Loop() {
				// Far enough ahead that all 2,000 are stored before any is due.
				at := time.Now().Add(500 * time.Millisecond)
				for sent := 0; sent < due; sent += batch {
					for i := range msgs {
						msgs[i] = &equeue.Message{Topic: "t", Body: []byte("due"), DeliverAt: at}
					}
					_, err := p.SendBatch(ctx, msgs)
					require.NoError(b, err)
				}
				require.True(b, time.Now().Before(at), "sending took longer than the delay")
				target := next + due
				for next < target {
					res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: next, Max: 256, Wait: 30 * time.Second})
					require.NoError(b, err)
					require.NotEmpty(b, res.Messages, "nothing became visible within 30 s")
					next = res.NextOffset
				}
				total += time.Since(at)
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/2000-due")
		})
	}
}
