package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// StoredTopics reads what the engine's Topics reports of each topic, but
// its offsets, from the store alone.
func TestStoredTopics_MatchTheEngine(t *testing.T) {
	st := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, e.CreateTopic(ctx, "orders", 3))
	require.NoError(t, e.CreateTopicWith(ctx, "jobs", equeue.TopicOptions{Queues: 1, Priorities: 2, Limits: equeue.TopicLimits{MaxMessages: 10}}))
	require.NoError(t, e.SetQueueWritable(ctx, "orders", 1, false))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("x")})
	require.NoError(t, err)

	want, err := e.Topics(ctx)
	require.NoError(t, err)
	got, err := equeue.StoredTopics(st)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	byName := map[string]equeue.TopicInfo{}
	for _, ti := range got {
		byName[ti.Name] = ti
	}
	for _, w := range want {
		g, ok := byName[w.Name]
		require.True(t, ok, w.Name)
		assert.Equal(t, w.ID, g.ID, w.Name)
		assert.True(t, w.CreatedAt.Equal(g.CreatedAt), w.Name)
		assert.Equal(t, w.Priorities, g.Priorities, w.Name)
		assert.Equal(t, w.Limits, g.Limits, w.Name)
		require.Len(t, g.Queues, len(w.Queues), w.Name)
		for i := range w.Queues {
			assert.Equal(t, w.Queues[i].ID, g.Queues[i].ID)
			assert.Equal(t, w.Queues[i].Writable, g.Queues[i].Writable, "%s/%d", w.Name, i)
			assert.Zero(t, g.Queues[i].MaxOffset, "no record is read")
		}
	}
	require.NoError(t, e.Close())

	bad := store.NewMemory()
	require.NoError(t, bad.Write(&store.Batch{Meta: []store.MetaOp{{Key: []byte("topic/bad"), Value: []byte("{")}}}))
	_, err = equeue.StoredTopics(bad)
	require.ErrorIs(t, err, equeue.ErrCorrupt)
}
