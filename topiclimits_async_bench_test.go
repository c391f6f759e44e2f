package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkTopicLimitsAsync is BenchmarkTopicLimits for SendAsync: one
// sender keeping 1,024 sends in flight, to a topic without limits and to
// one held at a drop-oldest limit (every answer there waits for the trim
// that brings the topic back to its limit). One op is one send, on an
// in-memory engine; cpu-ns/msg is the process's CPU time per send.
func BenchmarkTopicLimitsAsync(b *testing.B) {
	const window = 1024
	for _, c := range []struct {
		name   string
		limits equeue.TopicLimits
	}{
		{"plain", equeue.TopicLimits{}},
		{"drop-oldest-at-limit", equeue.TopicLimits{MaxMessages: 1000}},
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
			m := &equeue.Message{Topic: "t", Body: make([]byte, 100)}
			ring := make([]*equeue.SendFuture, window)
			b.ResetTimer()
			cpu0, _ := benchProcessCPU()
			start := time.Now()
			for i := range b.N + window {
				if f := ring[i%window]; f != nil {
					if _, err := f.Result(ctx); err != nil {
						b.Fatal(err)
					}
					ring[i%window] = nil
				}
				if i < b.N {
					ring[i%window] = p.SendAsync(ctx, m)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			if cpu1, ok := benchProcessCPU(); ok {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/msg")
			}
		})
	}
}
