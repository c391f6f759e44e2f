package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestConsumer_BroadcastCloseWithALocalRetryWaitingRepeatsNothing: a
// broadcasting member retries a failed message in place, after
// LocalRetryDelay. Closed while such a retry waits (Close's drain runs it
// once more, and it fails again), its commit stops below that message, and
// it used to handle every later message of the queue again after a
// restart. The commit now lists the later messages as done: the restart
// handles the waiting message again (its last attempt) and nothing else.
func TestConsumer_BroadcastCloseWithALocalRetryWaitingRepeatsNothing(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		clusterSuiteOnly(t, tr)
		ctx := ctxT(t)
		e, b, restart := openOverRestartable(t, tr, nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		var mu sync.Mutex
		handled := map[string][]int{} // body -> attempts seen
		count := func(body string) int { mu.Lock(); defer mu.Unlock(); return len(handled[body]) }
		opts := equeue.ConsumerOptions{
			Group: "g", ID: "m", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			LocalRetryDelay: time.Hour, MaxAttempts: 3,
			Handler: func(_ context.Context, m *equeue.Message) error {
				mu.Lock()
				defer mu.Unlock()
				handled[string(m.Body)] = append(handled[string(m.Body)], m.Attempt)
				if string(m.Body) == "bad" {
					return errors.New("fails")
				}
				return nil
			},
		}
		p := newProducer(t, b, nil)
		bodies := []string{"a", "bad", "b", "c", "d"}
		for _, body := range bodies {
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
			require.NoError(t, err)
		}
		c := startConsumer(t, b, opts)
		eventually(t, 10*time.Second, func() bool {
			for _, body := range bodies {
				if count(body) == 0 {
					return false
				}
			}
			return true
		}, "every message handled once")
		require.NoError(t, c.Close(), "closed while bad waits an hour for its retry")
		require.Equal(t, 2, count("bad"), "Close's drain ran the waiting message once more")
		require.NoError(t, p.Close())

		_, b = restart()
		c = startConsumer(t, b, opts)
		eventually(t, 10*time.Second, func() bool { return count("bad") == 3 }, "the waiting message is handled again after the restart")
		p = newProducer(t, b, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("after")})
		require.NoError(t, err)
		eventually(t, 10*time.Second, func() bool { return count("after") == 1 }, "a later message is handled")
		require.NoError(t, c.Close())
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []int{0, 1, 2}, handled["bad"], "the restart goes on from the stored attempts")
		for _, body := range []string{"a", "b", "c", "d", "after"} {
			require.Len(t, handled[body], 1, fmt.Sprintf("%s handled once", body))
		}
	})
}
