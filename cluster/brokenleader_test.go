package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
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
