package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A topic's ID (equeue.TopicInfo.ID) is the same on every node, in the
// leader's engine and in each node's store, and after a failover; a topic
// deleted and created again, at the next leader too, gets one no topic had.
func TestCluster_TopicIDsAgreeAndAreNeverGivenAgain(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recreate := func() uint32 {
		t.Helper()
		var ti equeue.TopicInfo
		eventually(t, 20*time.Second, func() error {
			l := c.waitLeader()
			if err := l.DeleteTopic(ctx, "t"); err != nil && !errors.Is(err, equeue.ErrTopicNotFound) {
				return err // not yet the lease of a new leader
			}
			if err := l.CreateTopic(ctx, "t", 1); err != nil {
				return err
			}
			var err error
			ti, err = l.Topic(ctx, "t")
			return err
		})
		return ti.ID
	}
	seen := map[uint32]bool{}
	var id uint32
	for range 5 {
		id = recreate()
		require.False(t, seen[id], "ID %d given again", id)
		seen[id] = true
	}

	c.waitConverged()
	for i, n := range c.nodes {
		stored, err := n.StoredTopics()
		require.NoError(t, err)
		require.Len(t, stored, 1, c.id(i))
		assert.Equal(t, id, stored[0].ID, "%s stores the leader's ID", c.id(i))
	}

	c.stop(c.leaderIndex())
	eventually(t, 30*time.Second, func() error {
		ti, err := c.waitLeader().Topic(ctx, "t")
		if err != nil {
			return err
		}
		if ti.ID != id {
			return fmt.Errorf("the next leader has ID %d, the first had %d", ti.ID, id)
		}
		return nil
	})
	again := recreate()
	assert.False(t, seen[again], "the next leader gave ID %d again", again)
}
