package cluster

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestNode_RedriveCutByTheEnginesCloseIsNotARefusal redrives three dead
// letters, one write each, and the leader's engine starts closing while
// the first is on its way (its tenure ended): that write is stored, and the
// next one meets the engine's bare equeue.ErrClosed. The redrive sent one
// dead letter back, so the node must not answer it as a refusal that did
// nothing (a *NotLeaderError, which a ClusterClient sends again to the
// next leader and answers with that redrive's count alone): its error
// matches equeue.ErrIndeterminate, as a redrive cut short by a refused
// write does. Before, cutShort let the bare ErrClosed through, taking it
// for the engine's refusal of a call that had not begun, and call() made
// it a NotLeaderError.
func TestNode_RedriveCutByTheEnginesCloseIsNotARefusal(t *testing.T) {
	var engine atomic.Pointer[equeue.Engine]
	var armed atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		OnEngine: func(e *equeue.Engine) { engine.Store(e) },
		admitHook: func(b *store.Batch) error {
			if armed.Load() && len(b.Entries) > 0 {
				enter()
				<-released
			}
			return nil
		}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, n.CreateTopic(ctx, "t", 1))
	_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}})
	require.NoError(t, err)

	// Member m of group g pulls the three and dead-letters each.
	a, err := n.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Clustering,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	var grant equeue.Grant
	require.Eventually(t, func() bool {
		a, err = n.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
		require.NoError(t, err)
		for _, g := range a.Queues {
			if g.Topic == "t" {
				grant = g
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "t/0 granted")
	res, err := n.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10, Group: "g", Member: "m", Epoch: grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	for _, m := range res.Messages {
		_, err := n.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: m.Offset,
			Attempts: 1, Cause: "fails", DeadLetter: true})
		require.NoError(t, err)
	}

	// The first dead letter's write is held; meanwhile the engine starts
	// closing, as the node does when the tenure ends.
	e := engine.Load()
	armed.Store(true)
	type redriven struct {
		sent int
		err  error
	}
	done := make(chan redriven, 1)
	go func() {
		sent, err := n.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
		done <- redriven{sent, err}
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the redrive's first write did not reach the store's admission")
	}
	go func() { _ = e.Close() }()
	require.Eventually(t, func() bool {
		_, err := e.Topics(ctx)
		return errors.Is(err, equeue.ErrClosed)
	}, 30*time.Second, 10*time.Millisecond, "the engine's close began")
	armed.Store(false)
	release()

	var r redriven
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the redrive did not return")
	}
	t.Logf("Redrive: %d, %v", r.sent, r.err)
	require.Equal(t, 1, r.sent, "the first dead letter went back")
	require.Error(t, r.err)
	var nl *NotLeaderError
	require.False(t, errors.As(r.err, &nl) && !errors.Is(r.err, equeue.ErrIndeterminate),
		"a redrive that sent a dead letter back answered as a refusal that did nothing: %v", r.err)
	require.ErrorIs(t, r.err, equeue.ErrIndeterminate)
}
