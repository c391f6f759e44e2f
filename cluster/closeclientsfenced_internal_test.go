package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNode_CloseStopsTheConsumerPhaseOnceAWriteFencedTheStore: the
// leader of one node closes, and its consumer's final commit, which the
// close lets it make before the fence, is held in the store's admission
// (a hung disk). Meanwhile another write of the tenure fails (Raft could
// not queue it), which fences the store while this node stays the
// leader: no Raft state or leader change is observed. The consumer phase
// serves a tenure that ended: it must stop at once, as it does for a lost
// leadership, rather than wait out its bound. Before, only Raft's
// observations woke the watch, and a fence alone was seen at the bound.
func TestNode_CloseStopsTheConsumerPhaseOnceAWriteFencedTheStore(t *testing.T) {
	r := newHeldRig(t)
	phase := make(chan clientsPhaseEnd, 1)
	watching := r.point()
	n := r.open(&Options{admitHook: r.heldBatch(false),
		tenureWatchHook:  watching.enter,
		clientsPhaseHook: func(end clientsPhaseEnd) { phase <- end }})
	e, err := n.Engine()
	require.NoError(t, err)
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()
	require.NotNil(t, rs)
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
	// A fence the watch's first look saw would prove nothing.
	r.reached(watching, "the consumer phase did not watch its tenure")
	require.True(t, n.tenureLive(rs), "the tenure serves the consumer phase")
	// What a write Raft could not queue does to the tenure (failed).
	require.ErrorIs(t, rs.failed(raft.ErrEnqueueTimeout), equeue.ErrNotLeader)
	require.Equal(t, raft.Leader, n.raft.State(), "the node still leads: Raft observed nothing")
	select {
	case end := <-phase:
		require.Equal(t, clientsPhaseTenureEnded, end, "the consumer phase ends as the store is fenced (not once its %v)", end)
	case <-time.After(2 * time.Minute):
		t.Fatal("the consumer phase did not end")
	}
	select {
	case <-r.released:
		t.Fatal("the held commit was let go before the phase ended")
	default:
	}

	r.release()
	select {
	case err = <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return once the store answered")
	}
	// The engine's close is bounded apart (engineCloseBound, from when
	// the close began): on a slow machine it may have been given up.
	if err != nil {
		require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "Close fails only for a bound that passed")
	}
	r.endsOnceReleased()
}
