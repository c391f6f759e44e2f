package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A member whose handler blocks for several session timeouts keeps
// heartbeating: it is not expired, its queues do not move to the other
// member, and the blocked message is handled once.
func TestHuntGroups_HandlerBlockingPastTheSessionTimeout(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		t.Run(map[bool]string{false: "concurrent", true: "orderly"}[orderly], func(t *testing.T) {
			e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: 300 * time.Millisecond})
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 2))
			var seen huntSeen
			release := make(chan struct{})
			var blocked atomic.Bool
			mk := func(id string) equeue.ConsumerOptions {
				return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
					Orderly: orderly, HeartbeatInterval: 50 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
					Handler: func(_ context.Context, m *equeue.Message) error {
						if string(m.Body) == "slow-0" {
							blocked.Store(true)
							<-release
						}
						seen.add(id, m)
						return nil
					}}
			}
			startConsumer(t, e, mk("a"))
			startConsumer(t, e, mk("b"))
			gi, err := e.Group(ctxT(t), "g")
			require.NoError(t, err)
			epoch := gi.Epoch
			huntSend(t, e, "t", 1, "slow", 1)
			eventually(t, 5*time.Second, blocked.Load, "the handler blocks")
			for range 4 { // several session timeouts
				huntSend(t, e, "t", 2, "meanwhile", 2)
				time.Sleep(300 * time.Millisecond)
			}
			gi, err = e.Group(ctxT(t), "g")
			require.NoError(t, err)
			assert.Len(t, gi.Members, 2, "no member expired")
			assert.Equal(t, epoch, gi.Epoch, "no rebalance")
			close(release)
			eventually(t, 5*time.Second, func() bool { return huntCommitted(t, e, "g") == 9 }, "everything committed")
			seen.mu.Lock()
			defer seen.mu.Unlock()
			assert.Equal(t, 1, seen.count["slow-0"], "the blocked message is handled once")
		})
	}
}
