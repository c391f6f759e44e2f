package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// signalCtx closes began the first time the engine looks at it: by then
// the node has checked its lease and handed the call to its engine.
type signalCtx struct {
	context.Context
	once  sync.Once
	began chan struct{}
}

func (c *signalCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.began) })
	return c.Context.Done()
}

func (c *signalCtx) Err() error {
	c.once.Do(func() { close(c.began) })
	return c.Context.Err()
}

// A long-poll pull that began while the leader held its lease and ends
// after the lease was lost answers that the node does not lead, not "no
// new message": another leader may have stored messages meanwhile.
func TestNode_LongPollEndingAfterTheLeaseIsLostIsNotLeader(t *testing.T) {
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Close()) })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))

	for _, stored := range []bool{false, true} {
		ctx := &signalCtx{Context: context.Background(), began: make(chan struct{})}
		type answer struct {
			res equeue.PullResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			req := &equeue.PullRequest{Topic: "t", Wait: 300 * time.Millisecond}
			var a answer
			if stored {
				a.res, _, a.err = n.PullStored(ctx, req)
			} else {
				a.res, a.err = n.Pull(ctx, req)
			}
			done <- a
		}()
		<-ctx.began
		DropLease(n)
		a := <-done
		RestoreLease(n)
		require.ErrorIs(t, a.err, equeue.ErrNotLeader, "stored %v: answered %+v", stored, a.res)
	}
}

// A heartbeat that waits for a change of its group began while the leader
// held its lease; when it ends after the lease was lost, the group state
// it would answer with (the member's grants, under the leader's epoch) may
// be out of date: another leader may have taken the group over. It is
// answered as not leading, as a long-poll pull is.
func TestNode_HeartbeatEndingAfterTheLeaseIsLostIsNotLeader(t *testing.T) {
	dir := t.TempDir()
	n, err := Open(dir, &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond, LeaderLeaseTimeout: 250 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Close()) })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 20*time.Second, 10*time.Millisecond)
	bg := context.Background()
	require.NoError(t, n.CreateTopic(bg, "t", 1))
	a, err := n.JoinGroup(bg, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)

	ctx := &signalCtx{Context: bg, began: make(chan struct{})}
	type answer struct {
		a   equeue.Assignment
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var ans answer
		ans.a, ans.err = n.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version, Wait: 300 * time.Millisecond})
		done <- ans
	}()
	<-ctx.began
	DropLease(n)
	ans := <-done
	RestoreLease(n)
	var nl *NotLeaderError
	require.ErrorAs(t, ans.err, &nl, "answered %+v", ans.a)
}
