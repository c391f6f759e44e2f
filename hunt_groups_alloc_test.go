package equeue_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Members of a clustering group join and close in a seeded random order
// while messages flow and handlers are slow enough for handovers to
// overlap: once the group settles, every queue has one owner, each member
// holds the floor or the ceiling of queues/members (the average
// allocation), and every message was handled.
func TestHuntGroups_AverageAllocationSettlesAfterChurn(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	const queues = 7
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			CommitInterval: 20 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error {
				time.Sleep(time.Millisecond)
				seen.add(id, m)
				return nil
			}}
	}
	rng := rand.New(rand.NewPCG(7, 11))
	live := map[string]*equeue.Consumer{}
	sent := 0
	for step := range 16 {
		if len(live) == 0 || (len(live) < 5 && rng.IntN(3) > 0) {
			id := fmt.Sprintf("m%d", step)
			live[id] = startConsumer(t, e, mk(id))
		} else {
			for id, c := range live { // any one
				require.NoError(t, c.Close())
				delete(live, id)
				break
			}
		}
		huntSend(t, e, "t", queues, fmt.Sprintf("s%d", step), queues)
		sent += queues
	}
	members := len(live)
	lo, hi := queues/members, (queues+members-1)/members
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctxT(t), "g")
		if err != nil || len(gi.Members) != members {
			return false
		}
		owners := map[equeue.QueueRef]int{}
		for _, m := range gi.Members {
			n := 0
			for _, q := range m.Queues {
				if q.Topic == "t" {
					owners[q]++
					n++
				}
			}
			if n < lo || n > hi {
				return false
			}
		}
		if len(owners) != queues {
			return false
		}
		for _, n := range owners {
			if n != 1 {
				return false
			}
		}
		return true
	}, "the group settles on an average allocation")
	for step := range 16 {
		p := fmt.Sprintf("s%d", step)
		eventually(t, 10*time.Second, func() bool { return len(seen.missing(p, queues)) == 0 }, "step %d handled: missing %v", step, seen.missing(p, queues))
	}
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == int64(sent) }, "everything committed")
}

// DeleteGroup with Force while its members consume: the consumers, still
// running, join again and start a new group from the earliest message, so
// every message (those sent after the deletion too) is handled by the
// new group, and its offsets reach the end. Without Force the deletion is
// refused and changes nothing.
func TestHuntGroups_DeleteGroupWhileMembersConsume(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	const queues = 3
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			CommitInterval: 10 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error {
				time.Sleep(time.Millisecond)
				seen.add(id, m)
				return nil
			}}
	}
	startConsumer(t, e, mk("a"))
	startConsumer(t, e, mk("b"))
	huntSend(t, e, "t", queues, "one", 60)
	eventually(t, 10*time.Second, func() bool { return seen.distinct() > 10 }, "the members consume")
	before, err := e.GroupOffsets(ctxT(t), "g")
	require.NoError(t, err)
	require.ErrorIs(t, e.DeleteGroup(ctxT(t), "g", equeue.DeleteGroupOptions{}), equeue.ErrGroupHasMembers)
	after, err := e.GroupOffsets(ctxT(t), "g")
	require.NoError(t, err)
	for q, off := range before {
		require.GreaterOrEqual(t, after[q], off, "a refused deletion moves no offset back")
	}
	seen.mu.Lock()
	runs := map[string]int{}
	for k, v := range seen.count {
		runs[k] = v
	}
	seen.mu.Unlock()
	require.NoError(t, e.DeleteGroup(ctxT(t), "g", equeue.DeleteGroupOptions{Force: true}))
	huntSend(t, e, "t", queues, "two", 30)
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctxT(t), "g")
		return err == nil && len(gi.Members) == 2
	}, "the consumers join again")
	eventually(t, 10*time.Second, func() bool { return len(seen.missing("two", 30)) == 0 }, "messages sent after the deletion handled: missing %v", seen.missing("two", 30))
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 90 }, "the new group's offsets reach the end")
	// The new group started from the earliest: what the old one had
	// handled before the deletion is handled again.
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for b, n := range runs {
		require.Greater(t, seen.count[b], n, "%s handled again by the new group", b)
	}
}
