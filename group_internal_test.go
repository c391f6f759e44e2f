package equeue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroupMeta_ConsumeFromKeepsStoredMeaning: group metadata stored before
// the default became earliest said 0 for latest; it still means latest, and
// what is stored now uses the same numbers.
func TestGroupMeta_ConsumeFromKeepsStoredMeaning(t *testing.T) {
	for _, tc := range []struct {
		stored string
		want   ConsumeFrom
	}{
		{`{"name":"g","from":0}`, ConsumeFromLatest},
		{`{"name":"g"}`, ConsumeFromLatest},
		{`{"name":"g","from":1}`, ConsumeFromEarliest},
		{`{"name":"g","from":2}`, ConsumeFromTimestamp},
	} {
		var m groupMeta
		require.NoError(t, json.Unmarshal([]byte(tc.stored), &m))
		g := newGroup(m)
		assert.Equal(t, tc.want, g.from, tc.stored)
		again, err := json.Marshal(groupMeta{Name: g.name, From: toStoredFrom(g.from)}) // as JoinGroup stores it
		require.NoError(t, err)
		var back groupMeta
		require.NoError(t, json.Unmarshal(again, &back))
		assert.Equal(t, tc.want, newGroup(back).from, "stored again: %s", again)
	}
	assert.Equal(t, storedFrom(1), toStoredFrom(ConsumeFromDefault), "the default is stored as earliest")
}

// TestJoinGroup_RefusedJoinStillHandsOnAnExpiredMembersQueues: a join
// with the ID of a member whose session expired removes that member at
// once (before the expiry sweep). When the join is then refused (here for
// a subscription mismatch), the removed member's queues must still reach
// the live members: they may not stay with nobody until the next change.
func TestJoinGroup_RefusedJoinStillHandsOnAnExpiredMembersQueues(t *testing.T) {
	e, err := Open("", &Options{InMemory: true, SessionTimeout: time.Hour}) // no sweep expires anyone here
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "u", 1))
	join := func(member, inc, topic string) error {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: member, Incarnation: inc, Subscriptions: []Subscription{{Topic: topic}}})
		return err
	}
	require.NoError(t, join("a", "a1", "t"))
	require.NoError(t, join("b", "b1", "t"))

	// a's session expired; the sweep has not run yet.
	g, err := e.groups.group("g")
	require.NoError(t, err)
	g.mu.Lock()
	g.members["a"].lastSeen.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	g.mu.Unlock()

	require.ErrorIs(t, join("a", "a2", "u"), ErrSubscriptionMismatch)

	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, info.Members, 1, "the expired incarnation is gone")
	assert.Equal(t, "b", info.Members[0].ID)
	a, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "b", Incarnation: "b1"})
	require.NoError(t, err)
	assert.Len(t, a.Queues, 2, "the live member owns every queue: %+v", a)
	for _, q := range info.Queues {
		assert.Equal(t, "b", q.Owner, "queue %s", q.QueueRef)
	}
}

// TestNewGroup_StoredSubscriptionsAreSearchable: a group's stored
// metadata whose subscriptions are not in topic order (written by hand,
// or by a version that did not sort them) still answers subscribesTo
// for every topic, which the retention floors rely on to count the group.
func TestNewGroup_StoredSubscriptionsAreSearchable(t *testing.T) {
	subs := []Subscription{{Topic: "zeta"}, {Topic: "alpha"}, {Topic: "mid"}}
	g := newGroup(groupMeta{Name: "g", Subs: subs})
	for _, s := range []string{"zeta", "alpha", "mid"} {
		assert.True(t, g.subscribesTo(s), "%s", s)
	}
	assert.False(t, g.subscribesTo("other"))
	assert.Equal(t, "zeta", subs[0].Topic, "the caller's slice is not reordered")
}
