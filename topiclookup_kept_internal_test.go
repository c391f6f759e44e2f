package equeue

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
)

// TestLookupTopic_DeletedTopicNotKept: the topic lookupTopic remembers
// last is not kept in memory by it once deleted, though no other topic is
// looked up after the delete.
func TestLookupTopic_DeletedTopicNotKept(t *testing.T) {
	ctx := context.Background()
	e, err := Open(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "a", 1))
	var res SendResult
	require.NoError(t, e.sendOne(ctx, "a", 0, &Message{Topic: "a", Body: []byte("x")}, nil, time.Now(), &res))
	w := func() weak.Pointer[topic] {
		found, ok := e.lookupTopic("a")
		require.True(t, ok)
		return weak.Make(found)
	}()
	require.NoError(t, e.DeleteTopic(ctx, "a"))
	require.Eventually(t, func() bool {
		runtime.GC()
		return w.Value() == nil
	}, 20*time.Second, 20*time.Millisecond, "the deleted topic is still reachable")
}
