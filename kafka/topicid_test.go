package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMetadata_TopicMadeAgainGetsANewID: a topic deleted and created again
// under its name, however quickly, gets a Metadata topic ID of its own, so
// clients that use topic IDs never take it for the topic deleted.
func TestMetadata_TopicMadeAgainGetsANewID(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	b := kclient(t, serve(t, e, nil)).SeedBrokers()[0]
	seen := map[[16]byte]int{}
	for i := range 50 {
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		tid := topicIDOf(ctx, t, b, "t")
		require.NotEqual(t, [16]byte{}, tid)
		prev, dup := seen[tid]
		require.False(t, dup, "creation %d got the topic ID of creation %d", i, prev)
		seen[tid] = i
		require.NoError(t, e.DeleteTopic(ctx, "t"))
	}
}
