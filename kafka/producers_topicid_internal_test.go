package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestProduce_TopicMadeAgainIgnoresOldProducerStates: a topic deleted
// outside the listener (Engine.DeleteTopic, the CLI) and made again under
// its name kept the idempotent producers' sequence states of the old one.
// A producer's first batch to the new topic was then acknowledged as a
// duplicate of a batch stored in the old topic, and not stored, or
// refused as out of order. A state names its topic's ID now: one of a
// topic since deleted is dropped when the producer next sends, and the
// batch is taken as a first one.
func TestProduce_TopicMadeAgainIgnoresOldProducerStates(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	send := func(pid int64, seq int32) kmsg.ProduceResponseTopicPartition {
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, "t", 0, idempotentBatch(pid, seq), &rp)
		return rp
	}
	require.Equal(t, errNone, send(7, 0).ErrorCode)
	require.Equal(t, errNone, send(8, 0).ErrorCode)
	require.Equal(t, errNone, send(8, 1).ErrorCode)

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	// Producer 7 starts over at 0: the batch is the new topic's first.
	rp := send(7, 0)
	require.Equal(t, errNone, rp.ErrorCode)
	assert.Equal(t, int64(0), rp.BaseOffset)
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Queues[0].MaxOffset, "the first batch to the new topic is stored, not taken for a duplicate")

	// Producer 8 goes on at a number the old topic's state does not expect.
	rp = send(8, 5)
	require.Equal(t, errNone, rp.ErrorCode, "the old topic's sequence state refuses the new topic's batch")
	assert.Equal(t, int64(1), rp.BaseOffset)
	// The new state goes on from there.
	assert.Equal(t, errNone, send(8, 6).ErrorCode)
	assert.Equal(t, errOutOfOrderSequence, send(8, 8).ErrorCode, "a gap in the new topic is refused")
}

// TestProducers_SweepDropsStatesOfDeletedTopics: the states of a topic
// deleted outside the listener waited for the idle expiry, a day after
// their producer's last batch; the periodic sweep drops them now, and
// those of a topic deleted and made again under its name, and keeps the
// others.
func TestProducers_SweepDropsStatesOfDeletedTopics(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	for _, name := range []string{"gone", "again", "kept"} {
		require.NoError(t, e.CreateTopic(ctx, name, 1))
	}
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	for _, name := range []string{"gone", "again", "kept"} {
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, name, 0, idempotentBatch(7, 0), &rp)
		require.Equal(t, errNone, rp.ErrorCode)
	}
	require.NoError(t, e.DeleteTopic(ctx, "gone"))
	require.NoError(t, e.DeleteTopic(ctx, "again"))
	require.NoError(t, e.CreateTopic(ctx, "again", 1))

	s.groups.sweepProducers(ctx, time.Now())
	s.pids.mu.Lock()
	defer s.pids.mu.Unlock()
	var left []string
	for k := range s.pids.parts {
		left = append(left, k.topic)
	}
	assert.Equal(t, []string{"kept"}, left)
}
