package equeue_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkRequest measures request-reply round trips through one echo
// service, sequential and with many requests in flight, over each transport.
func BenchmarkRequest(b *testing.B) {
	for _, tr := range transports {
		for _, par := range []int{1, 64} {
			b.Run(tr+"/parallelism="+strconv.Itoa(par), func(b *testing.B) {
				e, br := openOver(b, tr, "memory", &equeue.Options{Sync: equeue.SyncNever})
				ctx := context.Background()
				require.NoError(b, e.CreateTopic(ctx, "rpc", 4))
				rp := newProducer(b, br, nil)
				startConsumer(b, br, equeue.ConsumerOptions{
					Group: "echo", Subscriptions: []equeue.Subscription{{Topic: "rpc"}}, Concurrency: 64,
					Handler: func(ctx context.Context, m *equeue.Message) error {
						return equeue.Reply(ctx, rp, m, m.Body, nil)
					},
				})
				p := newProducer(b, br, nil)
				body := make([]byte, 100)
				b.SetParallelism(par)
				start := time.Now()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: body}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
			})
		}
	}
}
