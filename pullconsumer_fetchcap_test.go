package equeue_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPullConsumer_FetchWaitIsCappedByMaxPullWait: a Fetch of an empty
// queue asking to wait longer than the engine's MaxPullWait (an hour, or
// as long as a time.Duration holds), with a context without a deadline,
// returns nothing and no error once the cap passed, in process and over
// remote alike. Before, over remote the client's shared long-poll asked
// the broker again each time it answered at its cap, until the Fetch's
// own wait ended: an hour, or never.
func TestPullConsumer_FetchWaitIsCappedByMaxPullWait(t *testing.T) {
	forTransports(t, testPullConsumer_FetchWaitIsCappedByMaxPullWait)
}

func testPullConsumer_FetchWaitIsCappedByMaxPullWait(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{MaxPullWait: 200 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "p1", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pc.Close() })
	require.NoError(t, pc.Start(ctx))
	q := equeue.QueueRef{Topic: "t"}
	require.Equal(t, []equeue.QueueRef{q}, pc.Assigned())
	for _, wait := range []time.Duration{time.Hour, math.MaxInt64} {
		type fetched struct {
			msgs []*equeue.Message
			err  error
		}
		done := make(chan fetched, 1)
		go func() {
			msgs, err := pc.Fetch(context.Background(), q, 10, wait) // no deadline: only the cap ends it
			done <- fetched{msgs, err}
		}()
		select {
		case f := <-done:
			require.NoError(t, f.err, "wait %v", wait)
			assert.Empty(t, f.msgs, "wait %v", wait)
		case <-time.After(30 * time.Second):
			t.Fatalf("a Fetch waiting %v was not answered at the engine's MaxPullWait", wait)
		}
	}
}
