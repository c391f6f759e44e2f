package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Group epochs and versions start above Options.EpochBase, for new groups
// and for groups loaded from the store.
func TestGroup_EpochsStartAboveEpochBase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	join := func(e *equeue.Engine, member string) equeue.Assignment {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: member,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		return a
	}
	e, err := equeue.Open(dir, &equeue.Options{EpochBase: 1 << 40})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	a := join(e, "m1")
	assert.Greater(t, a.Epoch, int64(1<<40))
	assert.Greater(t, a.Version, int64(1<<40))
	require.NoError(t, e.Close())

	e, err = equeue.Open(dir, &equeue.Options{EpochBase: 2 << 40})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	b := join(e, "m1")
	assert.Greater(t, b.Epoch, int64(2<<40), "a stored group starts above the new base")
	for _, g := range b.Queues {
		assert.Greater(t, g.Epoch, a.Epoch)
	}

	_, err = equeue.Open("", &equeue.Options{InMemory: true, EpochBase: -1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

// A group that CommitGroupOffsets created (a group coordinated outside the
// engine, such as the Kafka listener's) grants epochs above
// Options.EpochBase too once native members join it.
func TestGroup_EpochsOfAGroupMadeByCommitGroupOffsetsStartAboveEpochBase(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{EpochBase: 1 << 40})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t"}: 0}))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	assert.Greater(t, a.Epoch, int64(1<<40))
	assert.Greater(t, a.Version, int64(1<<40))
	for _, g := range a.Queues {
		assert.Greater(t, g.Epoch, int64(1<<40))
	}
}
