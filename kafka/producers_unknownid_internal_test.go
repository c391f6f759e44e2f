package kafka

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// topicFailing is an engine whose Topic fails while fail is set: the
// lookup of a topic's ID before a producer's first batch fails then.
type topicFailing struct {
	*equeue.Engine
	fail atomic.Bool
}

func (b *topicFailing) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	if b.fail.Load() {
		return equeue.TopicInfo{}, errors.New("topic lookup failed")
	}
	return b.Engine.Topic(ctx, name)
}

// TestProducers_UnknownTopicIDIsLookedUpAgain: a producer's sequence
// state whose topic's ID could not be read when it was learned kept no
// ID until it expired, a day after its last batch: the sweep left it
// even once its topic was deleted, and a topic deleted and made again
// under its name found it still taken for its own, so a producer's
// batch to the new topic was acknowledged as a duplicate of one stored
// in the old topic, and not stored. The sweep drops such a state once
// its topic is gone, and the producer's next batch looks the ID up again.
func TestProducers_UnknownTopicIDIsLookedUpAgain(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	for _, name := range []string{"gone", "again"} {
		require.NoError(t, e.CreateTopic(ctx, name, 1))
	}
	b := &topicFailing{Engine: e}
	s, err := NewServer(b, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	c := newConn(s, discardConn{})
	defer c.cancel()
	send := func(topic string, pid int64, seq int32) kmsg.ProduceResponseTopicPartition {
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, topic, 0, idempotentBatch(pid, seq), &rp)
		return rp
	}

	// IDs the listener handed out: their first batches need no read of
	// the partition back (which, failing, would refuse them).
	gone := c.initProducerID(kmsg.NewPtrInitProducerIDRequest()).ProducerID
	again := c.initProducerID(kmsg.NewPtrInitProducerIDRequest()).ProducerID
	b.fail.Store(true)
	require.Equal(t, errNone, send("gone", gone, 0).ErrorCode)
	require.Equal(t, errNone, send("again", again, 0).ErrorCode)
	b.fail.Store(false)

	// The sweep drops the state of a topic deleted since.
	require.NoError(t, e.DeleteTopic(ctx, "gone"))
	s.groups.sweepProducers(ctx, time.Now())
	s.pids.mu.Lock()
	_, kept := s.pids.parts[pidPart{gone, "gone", 0}]
	s.pids.mu.Unlock()
	assert.False(t, kept, "the state of a deleted topic whose ID was not known")

	// The next batch learns the ID: a topic made again is told apart.
	require.Equal(t, errNone, send("again", again, 1).ErrorCode)
	require.NoError(t, e.DeleteTopic(ctx, "again"))
	require.NoError(t, e.CreateTopic(ctx, "again", 1))
	rp := send("again", again, 1)
	require.Equal(t, errNone, rp.ErrorCode)
	assert.Equal(t, int64(0), rp.BaseOffset)
	ti, err := e.Topic(ctx, "again")
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Queues[0].MaxOffset, "the batch is stored in the new topic, not taken for a duplicate")
}
