package equeue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestKeepGroup_RefreshesTheIdleClock: a group coordinated outside the
// engine whose coordinator says it is in use (KeepGroup: the Kafka
// listener, while the group has members) keeps its offsets under
// Options.GroupIdleTTL without committing; once the calls stop it expires
// a TTL later. An unknown group or a bad name is refused, through a
// namespace's view too, which qualifies the name.
func TestKeepGroup_RefreshesTheIdleClock(t *testing.T) {
	const ttl = 300 * time.Millisecond
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{GroupIdleTTL: ttl})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "kafka-group", map[equeue.QueueRef]int64{ref: 1}))

	require.ErrorIs(t, e.KeepGroup(ctx, "no-such-group"), equeue.ErrGroupNotFound)
	require.ErrorIs(t, e.KeepGroup(ctx, "bad name"), equeue.ErrInvalidName)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.ErrorIs(t, ns.KeepGroup(ctx, "kafka-group"), equeue.ErrGroupNotFound, "the namespace's own group of that name")

	for range 5 * int(ttl/(50*time.Millisecond)) { // five TTLs kept, no commit
		time.Sleep(50 * time.Millisecond)
		offs, err := e.GroupOffsets(ctx, "kafka-group")
		require.NoError(t, err)
		require.Equal(t, map[equeue.QueueRef]int64{ref: 1}, offs, "the offsets of a group kept in use went missing")
		require.NoError(t, e.KeepGroup(ctx, "kafka-group"))
	}
	eventually(t, 30*time.Second, func() bool {
		_, err := e.Group(ctx, "kafka-group")
		return errors.Is(err, equeue.ErrGroupNotFound)
	}, "deleted once it was no longer kept")
	require.ErrorIs(t, e.KeepGroup(ctx, "kafka-group"), equeue.ErrGroupNotFound, "a deleted group is not kept")
}

// TestKeepGroup_Namespace: a namespace's view keeps its own group.
func TestKeepGroup_Namespace(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "t", 1))
	require.NoError(t, ns.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}))
	require.NoError(t, ns.KeepGroup(ctx, "g"))
	err = ns.KeepGroup(ctx, "h")
	require.ErrorIs(t, err, equeue.ErrGroupNotFound)
	require.NotContains(t, err.Error(), "tenant:", "errors name the group as the namespace does")
	require.ErrorIs(t, e.KeepGroup(ctx, "g"), equeue.ErrGroupNotFound, "the engine's g is another group")
}
