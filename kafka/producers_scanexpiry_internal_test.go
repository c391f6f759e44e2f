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

// TestProducers_SweepDropsStaleScans: what rebuild read of a partition
// for producers the listener knew nothing of (partScan) stayed in memory
// until its topic was deleted, up to a producer ID for each of the
// partition's last records read, though a read older than producerIdle
// or of another leadership term is never used again (scanOf makes a new
// one). The periodic sweep drops such reads with the producers' idle
// states, and keeps a read of this term made since.
func TestProducers_SweepDropsStaleScans(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := context.Background()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	for part := range int32(2) {
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, "t", part, idempotentBatch(7, 0), &rp)
		require.Equal(t, errNone, rp.ErrorCode)
		// A producer unknown to the listener: its batch is checked
		// against a read of the partition.
		c.producePartition(c.ctx, 9, "t", part, idempotentBatch(8, 5), &rp)
		require.Equal(t, errNone, rp.ErrorCode)
	}
	s.pids.mu.Lock()
	require.Len(t, s.pids.scans, 2)
	// The read of partition 1 is of another term: a leadership lost.
	for k, sc := range s.pids.scans {
		if k.part == 1 {
			s.pids.scans[k] = &partScan{term: sc.term + 1, topicID: sc.topicID, made: sc.made, floor: sc.floor, last: sc.last}
		}
	}
	s.pids.mu.Unlock()

	s.groups.sweepProducers(ctx, time.Now())
	s.pids.mu.Lock()
	var left []int32
	for k := range s.pids.scans {
		left = append(left, k.part)
	}
	s.pids.mu.Unlock()
	assert.Equal(t, []int32{0}, left, "a read of another term is dropped")

	s.groups.sweepProducers(ctx, time.Now().Add(2*producerIdle))
	s.pids.mu.Lock()
	defer s.pids.mu.Unlock()
	assert.Empty(t, s.pids.parts)
	assert.Empty(t, s.pids.scans, "a read older than producerIdle is dropped")
}
