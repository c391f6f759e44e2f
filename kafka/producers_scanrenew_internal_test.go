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

// scanTest is a listener connection over an in-memory engine holding the
// topic "t" of one partition, for the tests of what rebuild read of it.
type scanTest struct {
	t *testing.T
	e *equeue.Engine
	s *Server
	c *conn
}

func newScanTest(t *testing.T) *scanTest {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(context.Background(), "t", 1))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c := newConn(s, discardConn{})
	t.Cleanup(c.cancel)
	return &scanTest{t: t, e: e, s: s, c: c}
}

// send produces a batch of one record of producer pid, at seq, to
// partition 0 of topic.
func (st *scanTest) send(topic string, pid int64, seq int32) kmsg.ProduceResponseTopicPartition {
	var rp kmsg.ProduceResponseTopicPartition
	st.c.producePartition(st.c.ctx, 9, topic, 0, idempotentBatch(pid, seq), &rp)
	return rp
}

// scan returns the read of partition 0 of topic the listener keeps, nil
// when none.
func (st *scanTest) scan(topic string) *partScan {
	st.s.pids.mu.Lock()
	defer st.s.pids.mu.Unlock()
	return st.s.pids.scans[scanKey{topic, 0}]
}

// stored is the offset after the last record of partition 0 of topic.
func (st *scanTest) stored(topic string) int64 {
	ti, err := st.e.Topic(context.Background(), topic)
	require.NoError(st.t, err)
	return ti.Queues[0].MaxOffset
}

// TestProducers_ScanOlderThanIdleIsReadAgain: what rebuild read of a
// partition's last records (partScan) was kept for the leadership term.
// A producer that went on storing after the read, then stayed idle until
// its state expired (producerIdle), had its state rebuilt from the read,
// where its last record was an older one: the retry of its last batch
// was refused OUT_OF_ORDER_SEQUENCE_NUMBER instead of acknowledged where
// it is stored. A read producerIdle old is made again for the producer
// asking after that.
func TestProducers_ScanOlderThanIdleIsReadAgain(t *testing.T) {
	st := newScanTest(t)
	require.Equal(t, errNone, st.send("t", 7, 0).ErrorCode)
	// A producer unknown to the listener: the partition is read, with
	// producer 7's record at offset 0 its last.
	require.Equal(t, errNone, st.send("t", 8, 5).ErrorCode)
	old := st.scan("t")
	require.NotNil(t, old)
	require.Equal(t, errNone, st.send("t", 9, 5).ErrorCode)
	require.Same(t, old, st.scan("t"), "a read younger than producerIdle is used again")

	// Producer 7 goes on storing (its state is known: nothing is read),
	// then stays idle until its state expires, a day after the read.
	rp := st.send("t", 7, 1)
	require.Equal(t, errNone, rp.ErrorCode)
	rp = st.send("t", 7, 2)
	require.Equal(t, errNone, rp.ErrorCode)
	last := rp.BaseOffset
	st.s.pids.mu.Lock()
	old.made = old.made.Add(-producerIdle)
	st.s.pids.mu.Unlock()
	st.s.pids.expire(time.Now().Add(2*producerIdle), producerIdle)
	require.Zero(t, ProducerStates(st.s, "t"))
	stored := st.stored("t")

	rp = st.send("t", 7, 2)
	assert.Equal(t, errNone, rp.ErrorCode, "the retry of the producer's last batch is checked against a fresh read")
	assert.Equal(t, last, rp.BaseOffset, "the retry is acknowledged where the batch is stored")
	assert.Equal(t, stored, st.stored("t"), "the retry is not stored again")
	assert.NotSame(t, old, st.scan("t"), "the partition is read again")
	rp = st.send("t", 7, 3)
	assert.Equal(t, errNone, rp.ErrorCode, "the producer's next batch follows its last one read")
	assert.Equal(t, stored, rp.BaseOffset)
}

// TestProducers_DeletedTopicDropsScans: what rebuild read of a topic's
// partitions (partScan) stayed in memory once the topic was deleted,
// through the listener or outside it, until the read was producerIdle
// old. It now goes with the producers' states of the topic, and a topic
// made again under its name has its partitions read again.
func TestProducers_DeletedTopicDropsScans(t *testing.T) {
	ctx := context.Background()

	t.Run("through the listener", func(t *testing.T) {
		st := newScanTest(t)
		require.Equal(t, errNone, st.send("t", 7, 0).ErrorCode)
		require.Equal(t, errNone, st.send("t", 8, 5).ErrorCode)
		require.NotNil(t, st.scan("t"))

		resp := st.c.deleteTopics(&kmsg.DeleteTopicsRequest{TopicNames: []string{"t"}})
		require.Len(t, resp.Topics, 1)
		require.Equal(t, errNone, resp.Topics[0].ErrorCode)
		assert.Nil(t, st.scan("t"), "the deleted topic's read is dropped")

		// The topic made again: a producer stores there, stays idle until
		// its state expires, and retries its last batch. The sweep, run
		// two days on, drops the state with the read its first batch made
		// of the new topic's partition (an ID the listener did not hand
		// out), as old as it.
		require.NoError(t, st.e.CreateTopic(ctx, "t", 1))
		for seq := range int32(3) {
			require.Equal(t, errNone, st.send("t", 9, seq).ErrorCode)
		}
		st.s.groups.sweepProducers(ctx, time.Now().Add(2*producerIdle))
		stored := st.stored("t")
		rp := st.send("t", 9, 2)
		assert.Equal(t, errNone, rp.ErrorCode)
		assert.Equal(t, stored-1, rp.BaseOffset, "the new topic's partition is read: the retry is acknowledged where it is stored")
		assert.Equal(t, stored, st.stored("t"), "the retry is not stored again")
	})

	t.Run("outside the listener", func(t *testing.T) {
		st := newScanTest(t)
		require.Equal(t, errNone, st.send("t", 7, 0).ErrorCode)
		require.Equal(t, errNone, st.send("t", 8, 5).ErrorCode)
		require.NotNil(t, st.scan("t"))

		require.NoError(t, st.e.DeleteTopic(ctx, "t"))
		require.NoError(t, st.e.CreateTopic(ctx, "t", 1))
		// The sweep, running now: the read is not producerIdle old, and
		// of this term, but of a topic deleted since.
		st.s.groups.sweepProducers(ctx, time.Now())
		assert.Nil(t, st.scan("t"), "the deleted topic's read is dropped")
	})
}
