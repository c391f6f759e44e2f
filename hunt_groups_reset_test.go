package equeue_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// ResetOffsets to the end while two members consume a backlog slowly (and
// while a third one joins, the queues it gets being handed over):
// the group's offsets never go below the reset's target afterwards (a
// member's commit of what it handled before the reset is fenced), and
// every message sent after the reset is handled.
func TestHuntGroups_ResetToEndWhileConsumingNeverMovesBack(t *testing.T) {
	for _, joining := range []bool{false, true} {
		t.Run(map[bool]string{false: "static", true: "joining"}[joining], func(t *testing.T) {
			e, _ := openEngine(t, "memory", nil)
			const queues, n = 4, 200
			require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
			var seen huntSeen
			var handled atomic.Int64
			mk := func(id string) equeue.ConsumerOptions {
				return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					CommitInterval: 10 * time.Millisecond, Concurrency: 2,
					Handler: func(_ context.Context, m *equeue.Message) error {
						time.Sleep(3 * time.Millisecond)
						seen.add(id, m)
						handled.Add(1)
						return nil
					}}
			}
			startConsumer(t, e, mk("a"))
			startConsumer(t, e, mk("b"))
			huntSend(t, e, "t", queues, "old", n)
			eventually(t, 10*time.Second, func() bool { return handled.Load() > 20 }, "the members consume")
			if joining {
				startConsumer(t, e, mk("c")) // its queues are handed over as the reset comes
			}
			require.NoError(t, e.ResetOffsets(ctxT(t), "g", equeue.ResetRequest{To: equeue.ResetToLatest}))
			target, err := e.GroupOffsets(ctxT(t), "g")
			require.NoError(t, err)
			for q, off := range target {
				if q.Topic != "t" {
					continue
				}
				assert.EqualValues(t, n/queues, off, "%v at the end after the reset", q)
			}
			var below atomic.Int64
			stop := make(chan struct{})
			watched := make(chan struct{})
			go func() {
				defer close(watched)
				for {
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
					offs, err := e.GroupOffsets(context.Background(), "g")
					if err != nil {
						continue
					}
					for q, off := range offs {
						if off < target[q] {
							below.Add(1)
						}
					}
				}
			}()
			huntSend(t, e, "t", queues, "new", 40)
			eventually(t, 10*time.Second, func() bool { return len(seen.missing("new", 40)) == 0 }, "every new message handled: missing %v", seen.missing("new", 40))
			eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == n+40 }, "offsets reach the end")
			close(stop)
			<-watched
			assert.Zero(t, below.Load(), "an offset went below the reset's target")
		})
	}
}

// ResetOffsets to a time while members consume: every message stored at
// or after the time is handled again, and the offsets reach the end.
func TestHuntGroups_ResetToTimeWhileConsumingRedeliversFromThere(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	const queues = 2
	require.NoError(t, e.CreateTopic(ctxT(t), "t", queues))
	var seen huntSeen
	mk := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			CommitInterval: 10 * time.Millisecond,
			Handler: func(_ context.Context, m *equeue.Message) error {
				time.Sleep(time.Millisecond)
				seen.add(id, m)
				return nil
			}}
	}
	startConsumer(t, e, mk("a"))
	huntSend(t, e, "t", queues, "before", 20)
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 20 }, "first batch committed")
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	huntSend(t, e, "t", queues, "after", 100)
	startConsumer(t, e, mk("b"))
	require.NoError(t, e.ResetOffsets(ctxT(t), "g", equeue.ResetRequest{To: equeue.ResetToTime, Time: at}))
	// every "after" message is handled at least once after the reset:
	// count the runs again from here.
	before := map[string]int{}
	seen.mu.Lock()
	for k, v := range seen.count {
		before[k] = v
	}
	seen.mu.Unlock()
	eventually(t, 10*time.Second, func() bool { return huntCommitted(t, e, "g") == 120 }, "offsets reach the end")
	eventually(t, 10*time.Second, func() bool {
		seen.mu.Lock()
		defer seen.mu.Unlock()
		for i := range 100 {
			b := "after-" + strconv.Itoa(i)
			if seen.count[b] <= before[b] {
				return false
			}
		}
		return true
	}, "every message after the time handled again")
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for i := range 20 {
		b := "before-" + strconv.Itoa(i)
		assert.Equal(t, before[b], seen.count[b], "%s is before the reset's time: not handled again", b)
	}
}
