package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// leaveCountWrapper wraps an engine (BrokerWrapper: the engine closes the
// clients opened on it) and counts the leaves that reach it.
type leaveCountWrapper struct {
	*equeue.Engine
	leaves atomic.Int32
}

func (w *leaveCountWrapper) Unwrap() equeue.Broker { return w.Engine }

func (w *leaveCountWrapper) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	err := w.Engine.LeaveGroup(ctx, req)
	if err == nil {
		w.leaves.Add(1)
	}
	return err
}

// Engine.Close closes an in-process PullConsumer its user never closed:
// it leaves its group before the engine stops (a member left behind
// would keep its queues until its session expired, on a broker that
// outlives it), is closed afterwards, and what it fetched without
// committing is delivered again after a reopen, never lost.
func TestEngineClose_ClosesAPullConsumerItsUserNeverClosed(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for _, body := range []string{"m0", "m1"} {
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	opts := equeue.PullConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		HeartbeatInterval: 50 * time.Millisecond}
	w := &leaveCountWrapper{Engine: e}
	pc, err := equeue.NewPullConsumer(w, opts)
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	q := equeue.QueueRef{Topic: "t"}
	msgs, err := pc.Fetch(ctx, q, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.NoError(t, pc.Commit(ctx, q, msgs[0].Offset+1))
	msgs, err = pc.Fetch(ctx, q, 1, 0) // m1: fetched, never committed
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	require.NoError(t, e.Close())
	require.EqualValues(t, 1, w.leaves.Load(), "the pull consumer left its group within the engine's close")
	_, err = pc.Fetch(ctx, q, 1, 0)
	require.ErrorIs(t, err, equeue.ErrClosed)

	e2, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e2.Close()) }()
	pc2, err := equeue.NewPullConsumer(e2, opts)
	require.NoError(t, err)
	require.NoError(t, pc2.Start(ctx))
	msgs, err = pc2.Fetch(ctx, q, 1, 0)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	require.Equal(t, "m1", string(msgs[0].Body), "the record fetched and not committed comes again")
}
