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

// heldPull is a Broker that holds the answer of one member's first pull
// until released, as a long-poll woken late or an answer still on the wire
// would.
type heldPull struct {
	equeue.Broker
	member          string
	once            sync.Once
	pulled, release chan struct{}
}

func (b *heldPull) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := b.Broker.Pull(ctx, req)
	if req.Member == b.member {
		b.once.Do(func() {
			close(b.pulled)
			<-b.release
		})
	}
	return res, err
}

// A Fetch whose pull was answered while the queue was taken away does not
// hand out messages of a queue the consumer no longer owns: the new owner
// gets them, and two members would handle them at once.
func TestPullConsumer_FetchInFlightWhenTheQueueIsTakenAwayIsFenced(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
		require.NoError(t, err)
	}
	b := &heldPull{Broker: e, member: "p2", pulled: make(chan struct{}), release: make(chan struct{})}
	opts := equeue.PullConsumerOptions{Group: "pg", ID: "p2", Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond}
	old, err := equeue.NewPullConsumer(b, opts)
	require.NoError(t, err)
	require.NoError(t, old.Start(ctx))
	defer old.Close()
	q := equeue.QueueRef{Topic: "t"}
	require.Equal(t, []equeue.QueueRef{q}, old.Assigned())

	var (
		got  []*equeue.Message
		ferr error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		got, ferr = old.Fetch(ctx, q, 10, 0)
	}()
	<-b.pulled

	// p1 joins and, first in the allocation's order, takes the queue.
	opts.ID = "p1"
	cur, err := equeue.NewPullConsumer(e, opts)
	require.NoError(t, err)
	require.NoError(t, cur.Start(ctx))
	defer cur.Close()
	eventually(t, 10*time.Second, func() bool { return len(cur.Assigned()) == 1 }, "p1 owns the queue")
	assert.Empty(t, old.Assigned(), "p2 released the queue")
	msgs, err := cur.Fetch(ctx, q, 10, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 3, "the new owner gets the messages")

	close(b.release)
	<-done
	assert.ErrorIs(t, ferr, equeue.ErrFenced, "the old owner's Fetch ended after the queue was taken away")
	assert.Empty(t, got, "messages of a queue taken away are not handed out by its old owner too")
}
