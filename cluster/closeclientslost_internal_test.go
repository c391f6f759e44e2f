package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestNode_CloseStopsTheConsumerPhaseOnceLeadershipIsLost: the leader of
// two nodes closes, and its consumer's final commit, which the close lets
// it make before the fence, is held in the store's admission (a hung
// disk). Meanwhile the leadership moves to the other node. The consumer
// phase serves a tenure that ended: it must stop at once, and the store
// be fenced, rather than wait out its bound. Before, nothing watched the
// Raft term during that phase, which ran its whole bound.
func TestNode_CloseStopsTheConsumerPhaseOnceLeadershipIsLost(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	phase := make(chan clientsPhaseEnd, 1)
	n1, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		admitHook: func(*store.Batch) error {
			if held.Load() {
				enter()
				<-released
			}
			return nil
		},
		clientsPhaseHook: func(end clientsPhaseEnd) { phase <- end }})
	require.NoError(t, err)
	var e *equeue.Engine
	require.Eventually(t, func() bool { e, err = n1.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	n2, err := Open(t.TempDir(), &Options{ID: "n2", RaftAddr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = n2.Close() }) // closed below; again is a no-op
	ctx := context.Background()
	require.NoError(t, n1.AddVoter(ctx, "n2", n2.RaftAddr()))
	require.NoError(t, n1.CreateTopic(ctx, "t", 1))
	_, err = n1.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
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

	held.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- n1.Close() }()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the consumer's final commit did not reach the store's admission")
	}
	require.NoError(t, n1.raft.LeadershipTransferToServer("n2", raft.ServerAddress(n2.RaftAddr())).Error())
	select {
	case end := <-phase:
		require.Equal(t, clientsPhaseTenureEnded, end, "the consumer phase ends as the tenure ends (not once its %v)", end)
	case <-time.After(2 * time.Minute):
		t.Fatal("the consumer phase did not end")
	}
	select {
	case <-released:
		t.Fatal("the held commit was let go before the phase ended")
	default:
	}

	release()
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
	require.NoError(t, n2.Close())
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond)
}
