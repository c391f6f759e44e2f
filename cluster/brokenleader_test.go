package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// A leader whose store failed can no longer apply the log, so it can never
// serve: it hands the leadership over, and a healthy node serves, while
// the broken node stays open.
func TestNode_LeaderWithABrokenStoreHandsOver(t *testing.T) {
	c := newCluster(t, 3, nil)
	leader := c.waitLeader()
	li := c.leaderIndex()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopic(ctx, "t", 1))
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("before")}}})
	require.NoError(t, err)

	cluster.BreakStore(leader, errors.New("injected store failure"))
	eventually(t, 30*time.Second, func() error {
		for i, n := range c.nodes {
			if i != li && n.Status().Serving {
				return nil
			}
		}
		return fmt.Errorf("no healthy node serves; %s leads: %v", c.id(li), leader.Status().State)
	})
	next := c.waitLeader()
	require.NotSame(t, leader, next)
	_, err = next.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	require.NoError(t, err)
	require.False(t, leader.Status().Serving)
}

// TestNode_LeaderOnAFullDiskRefusesWritesAsNotStored: a leader whose own
// store could not take a write with a margin to spare (its disk nearly
// full: store.Badger.Admit) refuses it before proposing it, with
// ErrNoSpace ("not stored"), and keeps serving: the write took no offset,
// no node's FSM broke, the tenure goes on, and once space is back the next
// write takes the next offset. Before, the write was proposed, and every
// node whose disk was as full broke applying it (a leader then hands over,
// and a cluster whose disks filled alike stopped until each node was
// reopened).
func TestNode_LeaderOnAFullDiskRefusesWritesAsNotStored(t *testing.T) {
	var full atomic.Bool
	c := newCluster(t, 3, func(o *cluster.Options) {
		cluster.SetAdmitHook(o, func(b *store.Batch) error {
			if full.Load() && len(b.Entries) > 0 {
				return fmt.Errorf("%w: injected at the leader's admission", store.ErrNoSpace)
			}
			return nil
		})
	})
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopic(ctx, "t", 1))
	r0, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("before")}}})
	require.NoError(t, err)
	tenure := cluster.TenureOf(leader)

	full.Store(true)
	for i := range 10 {
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%d", i)}}})
		require.ErrorIs(t, err, equeue.ErrNoSpace)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate)
		require.NotErrorIs(t, err, equeue.ErrNotLeader)
	}
	require.NoError(t, leader.CreateTopic(ctx, "meta", 1), "metadata goes in")
	full.Store(false)

	r1, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	require.NoError(t, err)
	assert.Equal(t, r0.FirstOffset+1, r1.FirstOffset, "the refused writes took no offset")
	assert.Same(t, leader, c.waitLeader(), "the leader leads on")
	assert.Equal(t, tenure, cluster.TenureOf(leader), "in the same tenure")
	for _, n := range c.nodes {
		require.NoError(t, cluster.FSMError(n), "no node's FSM broke")
	}
}
