package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// joinOf is a join of member m to group jg, which reads topic t.
var joinOf = &equeue.JoinRequest{Group: "jg", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}}

// servingNode opens a one-node cluster with o's hooks and waits until it
// serves, with topic t made.
func servingNode(t *testing.T, o *Options) *Node {
	t.Helper()
	o.ID, o.RaftAddr, o.Bootstrap = "n1", "127.0.0.1:0", true
	n, err := Open(t.TempDir(), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	e, err := n.Engine()
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(context.Background(), "t", 1))
	return n
}

// A join a node refuses because it does not lead (or its tenure ended
// under the call) added no member: its error matches ErrNotLeader, for
// the client to go to the leader, and ErrJoinRefused, so that a
// Consumer's Start sends no leave for it. Before, a node that was not
// leading, or whose engine was closed under the join, answered a bare
// not-leader error, and Start left for a member that was never made.
func TestNode_JoinRefusedForLeadershipKeepsItsMark(t *testing.T) {
	t.Run("not leading", func(t *testing.T) {
		// Never bootstrapped: no leader, no engine.
		n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0"})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, n.Close()) })
		_, err = n.JoinGroup(context.Background(), joinOf)
		var nl *NotLeaderError
		assert.True(t, errors.As(err, &nl), "a not-leader error with its leader: %v", err)
		assert.ErrorIs(t, err, equeue.ErrNotLeader)
		assert.ErrorIs(t, err, equeue.ErrJoinRefused)
	})
	t.Run("engine closed under the join", func(t *testing.T) {
		n := servingNode(t, &Options{})
		e, err := n.Engine()
		require.NoError(t, err)
		require.NoError(t, e.Close()) // as the end of a tenure closes it, the node not told yet
		_, err = n.JoinGroup(context.Background(), joinOf)
		var nl *NotLeaderError
		assert.True(t, errors.As(err, &nl), "a not-leader error with its leader: %v", err)
		assert.ErrorIs(t, err, equeue.ErrJoinRefused)
		assert.NotErrorIs(t, err, equeue.ErrClosed, "a consumer stops for good on ErrClosed")
	})
	t.Run("write refused at the tenure's end", func(t *testing.T) {
		var armed atomic.Bool
		var n *Node
		n = servingNode(t, &Options{admitHook: func(b *store.Batch) error {
			if holds(b, "jg") && armed.CompareAndSwap(true, false) {
				n.mu.RLock()
				rs := n.rstore
				n.mu.RUnlock()
				rs.fence(errFenced)
			}
			return nil
		}})
		armed.Store(true)
		_, err := n.JoinGroup(context.Background(), joinOf)
		require.False(t, armed.Load(), "the tenure ended at the join's write")
		assert.ErrorIs(t, err, equeue.ErrNotLeader)
		assert.ErrorIs(t, err, equeue.ErrJoinRefused)
	})
}

// A join the leader's engine refused for a reason of its own keeps that
// reason and ErrJoinRefused through the node, and is no not-leader error.
func TestNode_JoinRefusedByTheEngineKeepsItsSentinel(t *testing.T) {
	n := servingNode(t, &Options{})
	ctx := context.Background()
	_, err := n.JoinGroup(ctx, joinOf)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		req  *equeue.JoinRequest
		want error
	}{
		{"subscription mismatch", &equeue.JoinRequest{Group: "jg", Member: "x", Model: equeue.Broadcasting, Subscriptions: joinOf.Subscriptions}, equeue.ErrSubscriptionMismatch},
		{"missing topic", &equeue.JoinRequest{Group: "other", Member: "x", Subscriptions: []equeue.Subscription{{Topic: "missing"}}}, equeue.ErrTopicNotFound},
		{"bad member", &equeue.JoinRequest{Group: "jg", Member: "", Subscriptions: joinOf.Subscriptions}, equeue.ErrInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := n.JoinGroup(ctx, tc.req)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, equeue.ErrJoinRefused)
			assert.NotErrorIs(t, err, equeue.ErrNotLeader)
		})
	}
}
