package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// QueueStats.AppendedBytes is the encoded size of the records appended:
// a delayed message made visible counts its record, not the deletion of
// its index key that the move writes with it, and a record long enough for
// the store's value log counts its bytes, not the pointer the store keeps.
func TestQueueStats_AppendedBytesAreTheRecordsSize(t *testing.T) {
	ctx := ctxT(t)
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: mem})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("later"), Delay: 20 * time.Millisecond})
	require.NoError(t, err)
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: waitLong})
	require.NoError(t, err)
	// Batches complete in order: once this send returns, the move that
	// came before it is counted too.
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 4<<10)})
	require.NoError(t, err)

	recs, err := mem.Read(firstTopicQueue0, 0, 2, 2, 0)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	var stats equeue.QueueStats
	for _, s := range e.QueueStats() {
		if s.Topic == "t" {
			stats = s
		}
	}
	assert.Equal(t, uint64(2), stats.Appended)
	assert.Equal(t, uint64(len(recs[0].Value)+len(recs[1].Value)), stats.AppendedBytes)
}

// QueueStats' Appended and AppendedBytes count the same messages: those
// reported stored. A send whose fsync failed (ErrIndeterminate, never
// shown to readers) is in neither; Appended used to count it as soon as
// the store took its write, while AppendedBytes did not.
func TestQueueStats_FailedSyncCountsInNeither(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("stored")})
	require.NoError(t, err)
	before := queueStatsOf(t, r.E, "t", 0)
	require.Equal(t, uint64(1), before.Appended)
	require.NotZero(t, before.AppendedBytes)

	r.FS.FailSyncs(1)
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("unknown-1", "unknown-2")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)

	after := queueStatsOf(t, r.E, "t", 0)
	assert.Equal(t, before.Appended, after.Appended, "messages of unknown outcome are not counted")
	assert.Equal(t, before.AppendedBytes, after.AppendedBytes, "nor their bytes")
}

// queueStatsOf returns e's QueueStats of topic's queue.
func queueStatsOf(t testing.TB, e *equeue.Engine, topic string, queue int) equeue.QueueStats {
	t.Helper()
	for _, s := range e.QueueStats() {
		if s.Topic == topic && s.Queue == queue {
			return s
		}
	}
	t.Fatalf("no stats of %s/%d", topic, queue)
	return equeue.QueueStats{}
}
