package equeue

import (
	"context"
	"testing"
)

// BenchmarkLookupTopic looks one topic up from parallel senders, as each
// Send does.
func BenchmarkLookupTopic(b *testing.B) {
	e, err := Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close() })
	if err := e.CreateTopic(context.Background(), "t", 4); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := e.lookupTopic("t"); !ok {
				b.Fatal("not found")
			}
		}
	})
}
