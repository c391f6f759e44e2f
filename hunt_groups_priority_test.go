package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// Priority-lane consumers of one group while offset writes fail and
// members join and close: every message is handled, the offsets reach
// every lane's end, and once settled each queue's lanes are held by one
// member.
func TestHuntGroups_PriorityLanesAcrossOffsetWriteFailuresAndRebalances(t *testing.T) {
	rig := newFaultRig(t, "memory", nil)
	e := rig.E
	const queues, lanes = 2, 3
	require.NoError(t, e.CreateTopicWith(ctxT(t), "p", equeue.TopicOptions{Queues: queues, Priorities: lanes}))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "p"}},
			CommitInterval: 10 * time.Millisecond, HandoffTimeout: 5 * time.Second,
			Handler: func(_ context.Context, m *equeue.Message) error {
				time.Sleep(time.Millisecond)
				seen.add(id, m)
				return nil
			}}
	}
	a := startConsumer(t, e, mk("a"))
	total := huntSend(t, e, "p", queues*lanes, "one", 30)
	left := failOffsetWrites(rig.FS, "g", 3)
	b := startConsumer(t, e, mk("b"))
	total += huntSend(t, e, "p", queues*lanes, "two", 30)
	if err := a.Close(); err != nil {
		// its final commit may be one of the refused writes: "not stored"
		require.ErrorIs(t, err, faultstore.ErrInjected)
	}
	startConsumer(t, e, mk("c"))
	total += huntSend(t, e, "p", queues*lanes, "three", 30)
	_ = b
	for _, p := range []string{"one", "two", "three"} {
		eventually(t, 10*time.Second, func() bool { return len(seen.missing(p, 30)) == 0 }, "%s handled: missing %v", p, seen.missing(p, 30))
	}
	t.Logf("offset writes still to fail: %d", max(left.Load(), 0))
	rig.FS.OnWrite(nil)
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == int64(total) }, "offsets reach every lane's end")
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctxT(t), "g")
		if err != nil || len(gi.Members) != 2 {
			return false
		}
		holder := map[int]string{}
		n := 0
		for _, m := range gi.Members {
			for _, q := range m.Queues {
				if q.Topic != "p" {
					continue
				}
				n++
				base := q.Queue / lanes
				if h, ok := holder[base]; ok && h != m.ID {
					return false
				}
				holder[base] = m.ID
			}
		}
		return n == queues*lanes && len(holder) == queues
	}, "each queue's lanes are held by one member: %v", fmt.Sprint(e.Group(ctxT(t), "g")))
}
