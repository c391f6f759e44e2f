package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestAddQueues_PriorityLimitNamesUserCounts: AddQueues past the queue
// limit on a topic with priority lanes names the counts the caller gave
// and sees (queues, not queues times lanes), and the limit in queues.
func TestAddQueues_PriorityLimitNamesUserCounts(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 2, Priorities: 4}))
	err := e.AddQueues(ctx, "p", 63)
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "adding 63 queues to 2 exceeds 1..64")

	err = e.CreateTopicWith(ctx, "q", equeue.TopicOptions{Queues: 65, Priorities: 4})
	require.ErrorIs(t, err, equeue.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "queue count 65 not in 1..64")
}
