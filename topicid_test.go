package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// topicAdmin is the topic administration the engine and the remote
// clients share.
type topicAdmin interface {
	CreateTopic(ctx context.Context, name string, queues int) error
	DeleteTopic(ctx context.Context, name string) error
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
}

// TestTopic_MadeAgainHasANewID: a topic deleted and created again under
// its name, however quickly, has a TopicInfo.ID no earlier topic had, in
// process and over remote alike; Topics reports the ID Topic does.
func TestTopic_MadeAgainHasANewID(t *testing.T) {
	forTransports(t, testTopic_MadeAgainHasANewID)
}

func testTopic_MadeAgainHasANewID(t *testing.T, tr string) {
	ctx := ctxT(t)
	_, b := openOver(t, tr, "memory", nil)
	adm, ok := b.(topicAdmin)
	require.True(t, ok, "%T administers topics", b)
	require.NoError(t, adm.CreateTopic(ctx, "other", 1))
	other, err := adm.Topic(ctx, "other")
	require.NoError(t, err)
	seen := map[uint32]int{other.ID: -1}
	for i := range 200 {
		require.NoError(t, adm.CreateTopic(ctx, "t", 1))
		ti, err := adm.Topic(ctx, "t")
		require.NoError(t, err)
		require.NotZero(t, ti.ID)
		prev, dup := seen[ti.ID]
		require.False(t, dup, "creation %d has the ID of creation %d (-1: the other topic)", i, prev)
		seen[ti.ID] = i
		all, err := adm.Topics(ctx)
		require.NoError(t, err)
		for _, x := range all {
			if x.Name == "t" {
				assert.Equal(t, ti.ID, x.ID, "Topics reports the ID Topic does")
			}
		}
		require.NoError(t, adm.DeleteTopic(ctx, "t"))
	}
}

// TestTopic_IDSurvivesReopen: a topic keeps its ID across a reopen, and a
// topic created after the reopen gets one that no topic had before, even
// under the name of a topic deleted before it.
func TestTopic_IDSurvivesReopen(t *testing.T) {
	e, reopen := openEngine(t, "badger", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "a", 1))
	require.NoError(t, e.CreateTopic(ctx, "b", 1))
	a, err := e.Topic(ctx, "a")
	require.NoError(t, err)
	b, err := e.Topic(ctx, "b")
	require.NoError(t, err)
	require.NotEqual(t, a.ID, b.ID)
	require.NoError(t, e.DeleteTopic(ctx, "b")) // the last ID given is no topic's now

	e = reopen()
	a2, err := e.Topic(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, a.ID, a2.ID, "the same topic keeps its ID")
	require.NoError(t, e.CreateTopic(ctx, "b", 1))
	b2, err := e.Topic(ctx, "b")
	require.NoError(t, err)
	assert.NotEqual(t, b.ID, b2.ID, "the topic made again after a reopen has a new ID")
	assert.NotEqual(t, a.ID, b2.ID)

	e = reopen()
	b3, err := e.Topic(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, b2.ID, b3.ID)
}
