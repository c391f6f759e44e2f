package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/equeue-go/equeue"
)

// BenchmarkNamespacePull measures what a namespace view adds to a pull: the
// same messages of one in-memory topic pulled 32 at a time through the
// engine (via=engine, topic "a:orders") and through the view of namespace
// "a" (via=namespace, topic "orders"), which maps names in and copies each
// message out. Compare the two msgs/s in the same run.
func BenchmarkNamespacePull(b *testing.B) {
	for _, via := range []string{"engine", "namespace"} {
		b.Run("via="+via, func(b *testing.B) {
			ctx := context.Background()
			e, err := equeue.Open("", &equeue.Options{InMemory: true})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			ns, err := e.Namespace("a")
			if err != nil {
				b.Fatal(err)
			}
			if err := ns.CreateTopic(ctx, "orders", 1); err != nil {
				b.Fatal(err)
			}
			body := make([]byte, 100)
			for i := 0; i < b.N; i += 512 {
				msgs := make([]*equeue.Message, 0, 512)
				for j := i; j < min(i+512, b.N); j++ {
					msgs = append(msgs, &equeue.Message{Body: body, Properties: map[string]string{"n": fmt.Sprint(j)}})
				}
				if _, err := ns.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: msgs}); err != nil {
					b.Fatal(err)
				}
			}
			pull := func(off int64) (equeue.PullResult, error) {
				if via == "engine" {
					return e.Pull(ctx, &equeue.PullRequest{Topic: "a" + equeue.NamespaceSeparator + "orders", Offset: off, Max: 32})
				}
				return ns.Pull(ctx, &equeue.PullRequest{Topic: "orders", Offset: off, Max: 32})
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			var off int64
			for read := 0; read < b.N; {
				res, err := pull(off)
				if err != nil || len(res.Messages) == 0 {
					b.Fatalf("pull at %d: %v (%d messages)", off, err, len(res.Messages))
				}
				if via == "namespace" && res.Messages[0].Topic != "orders" {
					b.Fatalf("the view shows topic %q", res.Messages[0].Topic)
				}
				read += len(res.Messages)
				off = res.NextOffset
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
