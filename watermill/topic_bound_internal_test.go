package watermill

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTopicMaker_KeepsABoundedNumberOfNames: a Publisher or Subscriber
// remembered every topic name it had made sure of, for its whole life: one
// publishing to a topic per tenant or per job grew without bound. It keeps
// the names used last now, at most maxKnownTopics of them; a name
// forgotten is made sure of again on its next use.
func TestTopicMaker_KeepsABoundedNumberOfNames(t *testing.T) {
	m := newTopicMaker(nil, 0) // a broker that cannot create topics
	ctx := context.Background()
	require.NoError(t, m.ensure(ctx, "hot"))
	for i := range 3 * maxKnownTopics {
		require.NoError(t, m.ensure(ctx, fmt.Sprintf("job-%d", i)))
		if i%100 == 0 {
			require.NoError(t, m.ensure(ctx, "hot")) // used again: kept
		}
	}
	assert.LessOrEqual(t, m.done.len(), maxKnownTopics)
	assert.True(t, m.done.has("hot"), "a name in use is kept")
	assert.True(t, m.done.has(fmt.Sprintf("job-%d", 3*maxKnownTopics-1)), "the last name is kept")
	assert.False(t, m.done.has("job-0"), "the oldest name is forgotten")
}
