package remote_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// cutAgainAndAgain arms px again each time it cut, at a random byte (below
// maxBytes) of a random direction, until it cut maxCuts times or stop is
// closed. (Cut without end, a consumer's backoff grows with each failed
// pull, and the run with it.)
func cutAgainAndAgain(px *cutProxy, maxBytes, maxCuts int, stop <-chan struct{}) {
	for px.Cuts() < maxCuts {
		before := px.Cuts()
		px.Arm(rand.IntN(2), rand.IntN(maxBytes))
		for px.Cuts() == before {
			select {
			case <-stop:
				px.Arm(toServer, -1)
				px.Arm(toClient, -1)
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}
}

// TestCutProxy_ConsumerHandlesEveryMessageAcrossCuts runs a remote
// consumer whose connection is cut again and again at random bytes,
// either way, while it pulls, commits, heartbeats and sends failed
// messages back to the retry topic. Every message is handled
// successfully in the end, none skipped; and once the consumer closed,
// a consumer of the group started directly on the engine finds nothing
// left that was not handled.
func TestCutProxy_ConsumerHandlesEveryMessageAcrossCuts(t *testing.T) {
	const n = 1500
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	p := newProducer(t, e)
	for i := range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)})
		require.NoError(t, err)
	}
	s := startServer(t, e, "", nil)
	px := newCutProxy(t, s.addr)
	c := dial(t, px.Addr(), &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond, PullAhead: 16})

	var (
		mu      sync.Mutex
		tries   = map[string]int{}
		handled = map[string]int{}
	)
	handledCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}
	cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: "g", ID: "c1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
		HeartbeatInterval: 100 * time.Millisecond, CommitInterval: 20 * time.Millisecond,
		RetryTopicDelays: []time.Duration{10 * time.Millisecond}, LocalRetryDelay: 20 * time.Millisecond,
		SendBackRetryDelay: 20 * time.Millisecond, MaxAttempts: 1000, PullBatch: 8,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			b := string(m.Body)
			tries[b]++
			var i int
			_, _ = fmt.Sscanf(b, "m-%d", &i)
			if i%5 == 0 && tries[b] == 1 {
				return errors.New("first attempt fails")
			}
			handled[b]++
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, cons.Start(ctx))
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Go(func() { cutAgainAndAgain(px, 1500, 40, stop) })
	eventually(t, 60*time.Second, func() bool { return handledCount() == n }, "every message handled: %v of %d",
		func() any { return handledCount() }, n)
	close(stop)
	cutter.Wait()
	t.Logf("%d cuts", px.Cuts())
	require.NoError(t, cons.Close())

	// Everything was handled, so the consumer's last commits, made with
	// the cuts over, reach the end of every queue it read, the retry
	// topic's included.
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	ends := map[equeue.QueueRef]int64{}
	for _, topic := range []string{"t", equeue.RetryTopicPrefix + "g"} {
		ti, err := e.Topic(ctx, topic)
		require.NoError(t, err)
		for _, q := range ti.Queues {
			ends[equeue.QueueRef{Topic: topic, Queue: q.ID}] = q.MaxOffset
		}
	}
	require.NotEmpty(t, gi.Queues)
	for _, q := range gi.Queues {
		assert.Equal(t, ends[equeue.QueueRef{Topic: q.Topic, Queue: q.Queue}], q.Committed, "%s/%d committed at its end", q.Topic, q.Queue)
	}
}
