package kafka

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// produceFrame is a Produce v9 request frame (acks=-1) with one
// non-idempotent record batch for each partition of each topic named.
func produceFrame(topics map[string][]int32) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 1000
	for name, parts := range topics {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = name
		for _, p := range parts {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, seedBatch()
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return requestFrame(req, 1)
}

// partLocks counts the partition produce locks the server keeps.
func partLocks(s *Server) int {
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	return len(s.parts)
}

// TestProduce_PartitionLocksAreNotKeptForEveryName: a client naming
// partitions and topics that do not exist (or many that do) must not grow
// the listener's memory: the per-partition produce locks are only kept
// while a batch is being stored.
func TestProduce_PartitionLocksAreNotKeptForEveryName(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	for i := range 50 {
		name := "none-" + strings.Repeat("x", i%7) + string(rune('a'+i%26))
		require.NoError(t, c.handleRecovered(produceFrame(map[string][]int32{name: {0, 1, int32(i)}, "t": {int32(2 + i)}})))
	}
	require.NoError(t, c.handleRecovered(produceFrame(map[string][]int32{"t": {0, 1}})))
	assert.Zero(t, partLocks(s), "no lock is kept once its batches are stored")
}

// panickyAppender panics when a batch is appended: a stand-in for a bug
// that a produce trips.
type panickyAppender struct{ *equeue.Engine }

func (panickyAppender) Append(context.Context, *equeue.AppendRequest) (equeue.AppendResult, error) {
	panic("a bug in the append path")
}

// TestProduce_PanicInPartitionClosesOnlyThatConnection: a produce naming
// several partitions stores them in goroutines of their own; a panic there
// closes the connection with an error and a log line, as one in the
// request's own goroutine does, instead of taking down the process.
func TestProduce_PanicInPartitionClosesOnlyThatConnection(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 2))
	var logs strings.Builder
	var mu sync.Mutex
	s, err := NewServer(panickyAppender{e}, &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	err = c.handleRecovered(produceFrame(map[string][]int32{"t": {0, 1}}))
	require.ErrorContains(t, err, "internal error: a bug in the append path")
	mu.Lock()
	assert.Contains(t, logs.String(), "panic in a request")
	mu.Unlock()

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	require.NoError(t, newConn(s, discardConn{}).handleRecovered(requestFrame(versions, 2)), "the next connection is served")
}

// TestProduce_ProducerStatesAreNotKeptForUnstoredBatches: an idempotent
// producer's batches to topics and partitions that do not exist store
// nothing and leave no sequence state behind, so a client naming them
// cannot grow the listener's memory; a batch stored is remembered.
func TestProduce_ProducerStatesAreNotKeptForUnstoredBatches(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 1))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	c := newConn(s, discardConn{})
	defer c.cancel()
	send := func(topic string, part int32, pid int64, seq int32) kmsg.ProduceResponseTopicPartition {
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, topic, part, idempotentBatch(pid, seq), &rp)
		return rp
	}
	for i := range 50 {
		assert.Equal(t, errUnknownTopicOrPartition, send("none", int32(i), int64(1000+i), 0).ErrorCode)
		assert.Equal(t, errUnknownTopicOrPartition, send("t", int32(1+i), int64(1000+i), 0).ErrorCode)
	}
	s.pids.mu.Lock()
	assert.Zero(t, len(s.pids.parts), "nothing stored, nothing remembered")
	s.pids.mu.Unlock()

	require.Equal(t, errNone, send("t", 0, 7, 0).ErrorCode)
	s.pids.mu.Lock()
	assert.Equal(t, 1, len(s.pids.parts))
	s.pids.mu.Unlock()
	retry := send("t", 0, 7, 0)
	require.Equal(t, errNone, retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "the retry is acknowledged at its first offset")
	ti, err := e.Topic(context.Background(), "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Queues[0].MaxOffset, "and not stored again")
}

// idempotentBatch is a record batch of one record of producer pid, epoch 0,
// at sequence number seq.
func idempotentBatch(pid int64, seq int32) []byte {
	var w batchWriter
	w.begin(nil, 0)
	w.add(&equeue.Message{Body: []byte("v")}, DefaultTagHeader, false)
	raw := w.finish(false)
	binary.BigEndian.PutUint64(raw[43:], uint64(pid))
	binary.BigEndian.PutUint16(raw[51:], 0)
	binary.BigEndian.PutUint32(raw[53:], uint32(seq))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	return raw
}
