package equeue_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// pullBarrier is a Broker whose pulls of one topic wait until n of them
// have started, so that concurrent Fetches read from the same position.
type pullBarrier struct {
	equeue.Broker
	topic string
	n     int
	mu    sync.Mutex
	in    int
	all   chan struct{}
}

func (b *pullBarrier) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if req.Topic == b.topic {
		b.mu.Lock()
		b.in++
		if b.in == b.n {
			close(b.all)
		}
		b.mu.Unlock()
		select {
		case <-b.all:
		case <-ctx.Done():
			return equeue.PullResult{}, ctx.Err()
		}
	}
	return b.Broker.Pull(ctx, req)
}

// PullConsumer is safe for concurrent use: two Fetches of one queue that
// run at once never both return the same message, and the position ends
// past what either returned.
func TestPullConsumer_ConcurrentFetchesOfAQueueReturnEachMessageOnce(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	send := func(from, to int) {
		for i := from; i < to; i++ {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
			require.NoError(t, err)
		}
	}
	send(0, 10)
	b := &pullBarrier{Broker: e, topic: "t", n: 2, all: make(chan struct{})}
	pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "pg", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer pc.Close()
	q := equeue.QueueRef{Topic: "t"}

	var (
		wg  sync.WaitGroup
		got [2][]*equeue.Message
		ers [2]error
	)
	for i := range 2 {
		wg.Go(func() { got[i], ers[i] = pc.Fetch(ctx, q, 6, 0) })
	}
	wg.Wait()
	require.NoError(t, ers[0])
	require.NoError(t, ers[1])
	seen := map[int64]int{}
	for _, msgs := range got {
		for _, m := range msgs {
			seen[m.Offset]++
		}
	}
	for off, n := range seen {
		assert.Equal(t, 1, n, "offset %d returned by both fetches", off)
	}
	pos, ok := pc.Position(q)
	require.True(t, ok)
	assert.Equal(t, int64(6), pos, "the position is past what was returned")

	// What neither returned comes next.
	msgs, err := pc.Fetch(ctx, q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	assert.Equal(t, int64(6), msgs[0].Offset)
}

// After Close, Commit and Seek answer ErrClosed (not "no member", and
// not a Seek that seems to work).
func TestPullConsumer_CommitAndSeekAfterCloseAreClosed(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "pg", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	q := equeue.QueueRef{Topic: "t"}
	_, ok := pc.Position(q)
	require.True(t, ok)
	require.NoError(t, pc.Close())
	assert.ErrorIs(t, pc.Commit(ctx, q, 0), equeue.ErrClosed)
	assert.ErrorIs(t, pc.Seek(q, 0), equeue.ErrClosed)
}
