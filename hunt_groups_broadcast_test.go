package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Broadcasting members joining and leaving around a close and reopen of
// the engine: each member, an old one that left before the restart, one
// that stayed until the engine closed it and one that joins only after
// the reopen, receives every message.
func TestHuntGroups_BroadcastMembersAcrossARestartReceiveEverything(t *testing.T) {
	e, reopen := openEngine(t, "badger", nil)
	const queues = 3
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: 20 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error { seen.add(id, m); return nil }}
	}
	a := startConsumer(t, e, mk("a"))
	startConsumer(t, e, mk("b"))
	huntSend(t, e, "t", queues, "one", 12)
	eventually(t, 10*time.Second, func() bool { return seen.of("a") == 12 && seen.of("b") == 12 }, "both get the first batch")
	require.NoError(t, a.Close())
	huntSend(t, e, "t", queues, "two", 12)
	eventually(t, 10*time.Second, func() bool { return seen.of("b") == 24 }, "b gets the second batch")
	huntSend(t, e, "t", queues, "three", 12) // maybe not handled before the close
	e = reopen()
	huntSend(t, e, "t", queues, "four", 12)
	startConsumer(t, e, mk("c"))
	startConsumer(t, e, mk("a"))
	startConsumer(t, e, mk("b"))
	for _, id := range []string{"a", "b", "c"} {
		eventually(t, 10*time.Second, func() bool { return seen.of(id) == 48 }, "%s receives every message (has %d)", id, seen.of(id))
	}
	assert.Equal(t, 48, seen.distinct())
}
