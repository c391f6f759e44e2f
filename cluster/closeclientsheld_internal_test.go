package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNode_PlainCloseIsBoundedWhileAConsumersFinalCommitIsHeld: a
// consumer runs on the leader's engine, and its final commit, which the
// node's close lets it make before the fence, is held in the store's
// admission (a hung disk). Close must not wait for it for ever: it
// fences the store once the close's bound passed, and returns an error
// matching equeue.ErrCloseAbandoned (the engine's close, which waits for
// that commit too, is given up), with Raft's listener closed; once the
// store answers, everything ends and the directory is free again.
func TestNode_PlainCloseIsBoundedWhileAConsumersFinalCommitIsHeld(t *testing.T) {
	r := newHeldRig(t)
	n := r.open(&Options{admitHook: r.heldBatch(false)})
	e, err := n.Engine()
	require.NoError(t, err)
	ctx := context.Background()
	_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
	require.NoError(t, err)
	handled := make(chan struct{})
	once := sync.OnceFunc(func() { close(handled) })
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		CommitInterval: time.Hour,
		Handler:        func(context.Context, *equeue.Message) error { once(); return nil },
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	select {
	case <-handled:
	case <-time.After(time.Minute):
		t.Fatal("the consumer did not handle the message")
	}

	r.held.Store(true)
	closed := r.startClose()
	r.reached(r.write, "the consumer's final commit did not reach the store's admission")
	r.closeBounded(closed, "Close waits for the consumer's held commit")
	r.endsOnceReleased()
}
