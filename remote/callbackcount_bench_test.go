package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// BenchmarkAppendSyncStream: one synchronous Append at a time, on the
// client's append stream to a server in this process (the path that asks
// whether it runs in a callback of the client).
func BenchmarkAppendSyncStream(b *testing.B) {
	e, c := setup(b, nil)
	ctx := context.Background()
	require.NoError(b, e.CreateTopic(ctx, "bench", 1))
	req := &equeue.AppendRequest{Topic: "bench", Messages: []*equeue.Message{benchMessage()}}
	_, err := c.Append(ctx, req) // opens the stream
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Append(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunsCallback: the question itself, asked from a goroutine that
// runs no callback of the client.
func BenchmarkRunsCallback(b *testing.B) {
	_, c := setup(b, nil)
	b.ReportAllocs()
	for b.Loop() {
		if c.RunsCallback() {
			b.Fatal("no callback runs")
		}
	}
}
