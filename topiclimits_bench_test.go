package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkTopicLimits compares sends to a topic without limits, with a
// rejecting limit never reached (the writer's count check), and at a
// drop-oldest limit (every send trims one message), the same for MaxBytes
// (the writer's byte check; a trim that reads the sizes of what it cuts). One op is one Send,
// from concurrent producers, on an in-memory engine.
func BenchmarkTopicLimits(b *testing.B) {
	for _, c := range []struct {
		name   string
		limits equeue.TopicLimits
	}{
		{"plain", equeue.TopicLimits{}},
		{"reject-below-limit", equeue.TopicLimits{MaxMessages: 1 << 40, Overflow: equeue.OverflowReject}},
		{"drop-oldest-at-limit", equeue.TopicLimits{MaxMessages: 1000}},
		{"bytes-reject-below-limit", equeue.TopicLimits{MaxBytes: 1 << 50, Overflow: equeue.OverflowReject}},
		{"bytes-drop-oldest-at-limit", equeue.TopicLimits{MaxBytes: 1000 * 200}}, // ~1,000 messages
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			e, err := equeue.Open("", &equeue.Options{InMemory: true, Retention: equeue.RetentionPolicy{Interval: -1}})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			if err := e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 4, Limits: c.limits}); err != nil {
				b.Fatal(err)
			}
			p, err := equeue.NewProducer(e, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			body := make([]byte, 100)
			b.SetParallelism(4)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: body}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
