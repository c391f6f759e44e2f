package cluster

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
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
	leaks := goleak.IgnoreCurrent()
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		admitHook: func(*store.Batch) error {
			if held.Load() {
				enter()
				<-released
			}
			return nil
		}})
	require.NoError(t, err)
	var e *equeue.Engine
	require.Eventually(t, func() bool { e, err = n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
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
	raftAddr := n.RaftAddr()

	held.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the consumer's final commit did not reach the store's admission")
	}
	select {
	case err = <-closed:
	case <-time.After(2 * time.Minute):
		release()
		t.Fatalf("Close waits for the consumer's held commit (returned %v once released)", <-closed)
	}
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned, "the engine's close goes on in the background")
	ln, lerr := net.Listen("tcp", raftAddr)
	require.NoError(t, lerr, "Raft's listener is closed")
	require.NoError(t, ln.Close())

	release()
	storeFreed(t, dir)
	require.Eventually(t, func() bool { return goleak.Find(leaks) == nil }, time.Minute, 50*time.Millisecond,
		"the consumer's and the engine's close end once the store answers")
}
