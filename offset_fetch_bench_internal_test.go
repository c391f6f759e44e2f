package equeue

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// BenchmarkFetchOffsets_StartsOverManyQueues fetches the starts of a
// member granted every queue of a many-queue topic, in a group starting
// from the earliest offset with no offset stored: the path a member takes
// when it first gets its queues. The offsets each fetch stores are dropped
// from memory between fetches (off the clock), so every fetch works out
// every start again.
func BenchmarkFetchOffsets_StartsOverManyQueues(b *testing.B) {
	const queues = 256
	ctx := context.Background()
	e, err := Open("", &Options{Store: store.NewMemory(), Retention: RetentionPolicy{Interval: -1}})
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, e.Close()) })
	require.NoError(b, e.CreateTopic(ctx, "t", queues))
	a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: "m", Model: Clustering, From: ConsumeFromEarliest,
		Subscriptions: []Subscription{{Topic: "t"}}})
	require.NoError(b, err)
	require.Len(b, a.Queues, queues)
	g, err := e.groups.group("g")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		g.mu.Lock()
		clear(g.offsets)
		clear(g.attempts)
		g.mu.Unlock()
		b.StartTimer()
		if _, err := e.FetchOffsets(ctx, "g", "m", a.Queues); err != nil {
			b.Fatal(err)
		}
	}
}
