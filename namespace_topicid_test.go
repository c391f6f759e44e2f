package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNamespace_TopicIDsCountNoOtherNamespace: the TopicInfo.ID a
// Namespace view shows is not the engine's creation count, so a tenant
// cannot tell from the IDs of its own topics how many topics other
// namespaces made in between; the view's IDs still do what IDs do: no
// two topics of the view share one (a topic made again under its name
// gets a new one), Topics shows the ID Topic does, and a topic keeps its
// ID across a reopen.
func TestNamespace_TopicIDsCountNoOtherNamespace(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	view := func(name string) *equeue.Namespace {
		v, err := e.Namespace(name)
		require.NoError(t, err)
		return v
	}
	idOf := func(v *equeue.Namespace, topic string) uint32 {
		ti, err := v.Topic(ctx, topic)
		require.NoError(t, err)
		require.NotZero(t, ti.ID)
		return ti.ID
	}
	a, b := view("tenant-a"), view("tenant-b")
	require.NoError(t, a.CreateTopic(ctx, "first", 1))
	const others = 5
	for i := range others {
		require.NoError(t, b.CreateTopic(ctx, string(rune('k'+i)), 1))
	}
	require.NoError(t, a.CreateTopic(ctx, "second", 1))
	first, second := idOf(a, "first"), idOf(a, "second")
	engineFirst, err := e.Topic(ctx, "tenant-a:first")
	require.NoError(t, err)
	assert.NotEqual(t, engineFirst.ID, first, "the view shows another ID than the engine's creation count")
	assert.NotEqual(t, uint32(others+1), second-first, "tenant-a's IDs count tenant-b's topics")

	seen := map[uint32]string{first: "first", second: "second"}
	for i := range 100 {
		require.NoError(t, a.CreateTopic(ctx, "again", 1))
		id := idOf(a, "again")
		prev, dup := seen[id]
		require.False(t, dup, "creation %d of \"again\" has the ID of %s", i, prev)
		seen[id] = "an earlier \"again\""
		all, err := a.Topics(ctx)
		require.NoError(t, err)
		for _, ti := range all {
			if ti.Name == "again" {
				assert.Equal(t, id, ti.ID, "Topics shows the ID Topic does")
			}
		}
		require.NoError(t, a.DeleteTopic(ctx, "again"))
	}

	e = reopen()
	a = view("tenant-a")
	assert.Equal(t, first, idOf(a, "first"), "the view's ID survives a reopen")
	assert.Equal(t, second, idOf(a, "second"))
}

// TestNamespace_RetryCopiesShowNoEngineTopicID: a retry copy carries its
// origin topic's engine ID (SysOriginTopicID), the engine's count of topic
// creations; a view's messages do not show it, so a tenant cannot read
// that count from its own retries. The engine still skips the copies of
// a topic made again.
func TestNamespace_RetryCopiesShowNoEngineTopicID(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	v, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, v.CreateTopic(ctx, "t", 1))
	sendBackDue(t, v, "g", "t", "old")

	raw, err := e.Pull(ctx, &equeue.PullRequest{Topic: equeue.RetryTopic("tenant-a:g")})
	require.NoError(t, err)
	require.Len(t, raw.Messages, 1)
	require.NotEmpty(t, raw.Messages[0].SysProperty(equeue.SysOriginTopicID), "the engine's copy carries the ID")

	seen, err := v.Pull(ctx, &equeue.PullRequest{Topic: equeue.RetryTopic("g")})
	require.NoError(t, err)
	require.Len(t, seen.Messages, 1)
	m := seen.Messages[0]
	assert.Equal(t, "t", m.SysProperty(equeue.SysOriginTopic), "the view shows its own name of the origin")
	assert.Empty(t, m.SysProperty(equeue.SysOriginTopicID), "the view does not show the engine's topic ID")
}
