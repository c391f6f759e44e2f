package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroups_LeavesOutAGroupDeletedWhileListing: a group deleted after
// Groups listed the names, before it read that group, is left out; the
// listing does not fail. It did with ErrGroupNotFound, and a metrics
// scrape (equeue_group_lag, equeue_group_members) failed as a whole each
// time a group was deleted while it ran (DeleteGroup, GroupIdleTTL).
func TestGroups_LeavesOutAGroupDeletedWhileListing(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, g := range []string{"a", "b"} {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: g, Member: "m", Incarnation: "i", Subscriptions: []Subscription{{Topic: "t"}}})
		require.NoError(t, err)
	}

	// Groups reads "a" first: holding a's lock stops it there, with both
	// names listed.
	a, err := e.groups.group("a")
	require.NoError(t, err)
	a.mu.Lock()
	locked := true
	defer func() {
		if locked {
			a.mu.Unlock()
		}
	}()
	type listing struct {
		groups []GroupInfo
		err    error
	}
	listed := make(chan listing, 1)
	go func() {
		gs, err := e.Groups(ctx)
		listed <- listing{gs, err}
	}()
	waitFor(t, func() bool { return stackHas("equeue.(*Engine).groupInfo(") }, "Groups waits for group a")

	// b goes meanwhile. Its delete may wait for a's lock once b has left
	// memory (deleting b's retry topic looks at every group's offsets).
	deleted := make(chan error, 1)
	go func() { deleted <- e.DeleteGroup(ctx, "b", DeleteGroupOptions{Force: true}) }()
	waitFor(t, func() bool { _, err := e.groups.group("b"); return err != nil }, "b left memory")

	a.mu.Unlock()
	locked = false
	got := <-listed
	require.NoError(t, got.err, "a group deleted while Groups ran fails the listing")
	require.Len(t, got.groups, 1)
	assert.Equal(t, "a", got.groups[0].Name)
	require.NoError(t, <-deleted)
}
