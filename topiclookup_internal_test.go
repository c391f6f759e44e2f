package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLookupTopic_DeletedAndRecreated: the topic a lookup remembers is
// never answered once the topic was deleted, nor in place of the topic
// created again under its name; lookups of several topics in turn each
// get their own.
func TestLookupTopic_DeletedAndRecreated(t *testing.T) {
	ctx := context.Background()
	e, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "a", 1))
	require.NoError(t, e.CreateTopic(ctx, "b", 2))

	first, ok := e.lookupTopic("a")
	require.True(t, ok)
	again, ok := e.lookupTopic("a")
	require.True(t, ok)
	assert.Same(t, first, again)
	for range 3 { // in turn
		a, okA := e.lookupTopic("a")
		b, okB := e.lookupTopic("b")
		require.True(t, okA)
		require.True(t, okB)
		assert.Equal(t, "a", a.name)
		assert.Equal(t, "b", b.name)
	}
	_, ok = e.lookupTopic("a")
	require.True(t, ok)

	require.NoError(t, e.DeleteTopic(ctx, "a"))
	_, ok = e.lookupTopic("a")
	assert.False(t, ok, "a deleted topic is not found")

	require.NoError(t, e.CreateTopic(ctx, "a", 3))
	created, ok := e.lookupTopic("a")
	require.True(t, ok)
	assert.NotSame(t, first, created, "the topic created again, not the deleted one")
	assert.Len(t, created.queueList(), 3)
	assert.False(t, created.deleted.Load())
}

// TestSend_TopicDeletedAndRecreated: sends that follow a topic's deletion
// fail with ErrTopicNotFound, and once it is created again they land in
// the new topic, from offset 0.
func TestSend_TopicDeletedAndRecreated(t *testing.T) {
	ctx := context.Background()
	e, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var res SendResult
	for range 3 {
		require.NoError(t, e.sendOne(ctx, "t", 0, &Message{Topic: "t", Body: []byte("x")}, nil, time.Now(), &res))
	}
	assert.Equal(t, int64(2), res.Offset)
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	err = e.sendOne(ctx, "t", 0, &Message{Topic: "t", Body: []byte("y")}, nil, time.Now(), &res)
	require.ErrorIs(t, err, ErrTopicNotFound)

	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	err = e.sendOne(ctx, "t", 0, &Message{Topic: "t", Body: []byte("z")}, nil, time.Now(), &res)
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.Offset, "stored in the new topic")
}
