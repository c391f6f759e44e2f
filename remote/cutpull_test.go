package remote_test

import (
	"context"
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

// TestCutProxy_PullConsumerSkipsNothingAcrossCutsAndEndedContexts runs a
// remote PullConsumer (reading ahead) whose Fetches end with their
// contexts at random moments, and whose connection is cut at random bytes,
// while messages keep coming. Whatever a Fetch returned, the messages of
// each queue come back in order, each once, none skipped; and the offsets
// it committed are the group's when it closes.
func TestCutProxy_PullConsumerSkipsNothingAcrossCutsAndEndedContexts(t *testing.T) {
	const n = 1200
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	s := startServer(t, e, "", nil)
	px := newCutProxy(t, s.addr)
	c := dial(t, px.Addr(), &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond, PullAhead: 64})
	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "m1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, HeartbeatInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	eventually(t, 10*time.Second, func() bool { return len(pc.Assigned()) == 2 }, "both queues assigned")

	p := newProducer(t, e)
	var sending sync.WaitGroup
	sending.Go(func() {
		for i := range n {
			if _, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)}); err != nil {
				return
			}
			if i%16 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	})
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Go(func() { cutAgainAndAgain(px, 3000, 1000, stop) })

	next := map[int]int64{}
	committed := map[int]int64{}
	got := 0
	deadline := time.Now().Add(60 * time.Second)
	for got < n && time.Now().Before(deadline) {
		for _, q := range pc.Assigned() {
			fctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(4000))*time.Microsecond)
			msgs, err := pc.Fetch(fctx, q, 1+rand.IntN(16), 20*time.Millisecond)
			cancel()
			for _, m := range msgs {
				require.Equal(t, next[q.Queue], m.Offset, "queue %d: the next message in order, none skipped or repeated (fetch error %v)", q.Queue, err)
				next[q.Queue] = m.Offset + 1
				got++
			}
			if len(msgs) > 0 && rand.IntN(2) == 0 {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				if pc.Commit(cctx, q, next[q.Queue]) == nil {
					committed[q.Queue] = next[q.Queue]
				}
				cancel()
			}
		}
	}
	close(stop)
	cutter.Wait()
	sending.Wait()
	t.Logf("%d cuts", px.Cuts())
	require.Equal(t, n, got, "every message fetched")
	if err := pc.Close(); err != nil {
		// The leave broke with a connection the last cut reset.
		require.ErrorIs(t, err, remote.ErrUnavailable)
	}
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" {
			assert.GreaterOrEqual(t, q.Committed, committed[q.Queue], "queue %d: a commit answered committed holds", q.Queue)
			assert.LessOrEqual(t, q.Committed, next[q.Queue], "queue %d: nothing committed past what was fetched", q.Queue)
		}
	}
}
