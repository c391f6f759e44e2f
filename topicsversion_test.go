package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestEngine_TopicsVersion: the version grows at each topic created
// (auto-creation too) and deleted, and stays while only queues and
// messages change; a Namespace view tells the engine's.
func TestEngine_TopicsVersion(t *testing.T) {
	e, _ := openEngine(t, "memory", &equeue.Options{AutoCreateTopics: true})
	ctx := context.Background()
	ns, err := e.Namespace("ns")
	require.NoError(t, err)
	moved := func(what string, f func()) {
		t.Helper()
		before := e.TopicsVersion()
		f()
		assert.Greater(t, e.TopicsVersion(), before, what)
		assert.Equal(t, e.TopicsVersion(), ns.TopicsVersion(), what)
	}
	stayed := func(what string, f func()) {
		t.Helper()
		before := e.TopicsVersion()
		f()
		assert.Equal(t, before, e.TopicsVersion(), what)
	}
	moved("create", func() { require.NoError(t, e.CreateTopic(ctx, "t", 1)) })
	stayed("add queues", func() { require.NoError(t, e.AddQueues(ctx, "t", 1)) })
	stayed("append", func() {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	})
	moved("auto-create", func() {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "auto", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	})
	moved("create in a namespace", func() { require.NoError(t, ns.CreateTopic(ctx, "n", 1)) })
	moved("delete", func() { require.NoError(t, e.DeleteTopic(ctx, "t")) })
	stayed("a failed create", func() { require.ErrorIs(t, e.CreateTopic(ctx, "auto", 1), equeue.ErrTopicExists) })
}
