package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestLag_BroadcastingGroupIsItsSlowestMember: the lag stats and groups
// show for a broadcasting group is, per queue, that of its slowest member,
// as equeue_group_lag says: one message neither member consumed yet is a
// lag of one, not one per member. Both summed the members' rows.
func TestLag_BroadcastingGroupIsItsSlowestMember(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	broadcastBehindByOne(t, d)
	dir := "--dir=" + d

	st := decode[statsJSON](t, ok(t, dir, "stats", "--json"))
	assert.Equal(t, int64(1), st.Lag, "stats --json")
	assert.Contains(t, ok(t, dir, "stats"), "total lag:        1\n")

	g := decode[groupJSON](t, ok(t, dir, "groups", "readers", "--json"))
	require.Len(t, g.Queues, 4, "a row per member and queue")
	assert.Equal(t, int64(1), g.Lag, "groups --json")
	assert.Contains(t, ok(t, dir, "groups", "readers"), "total lag: 1\n")
}

// broadcastBehindByOne leaves in dir a broadcasting group "readers" of two
// members, "a" and "b", that consumed topic "news" (two queues) to its end,
// then one message stored in queue 1.
func broadcastBehindByOne(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "news", 2))
	for _, id := range []string{"a", "b"} {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
			Group: "readers", ID: id, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "news"}},
			PullWait:      50 * time.Millisecond,
			Handler:       func(context.Context, *equeue.Message) error { return nil },
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		require.NoError(t, c.Close())
	}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "news", Queue: 1, Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	g, err := e.Group(ctx, "readers")
	require.NoError(t, err)
	require.Len(t, g.Queues, 4, "each member has its offsets: %+v", g.Queues)
}
