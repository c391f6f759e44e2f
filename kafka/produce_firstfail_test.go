package kafka_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/kafka"
	"github.com/equeue-go/equeue/store"
)

// TestProduce_IdempotentFailedFirstBatchIsNotOvertaken: an idempotent
// producer's first batch to a partition fails (a store write, retriable);
// the batch it pipelined after it must be refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, not stored ahead of it as a first batch
// taken at any sequence number: the retry of the failed batch would then
// be refused as out of order, and the records stored out of their order.
// Sent again in order, both are stored, in order.
func TestProduce_IdempotentFailedFirstBatchIsNotOvertaken(t *testing.T) {
	for _, epochBump := range []bool{false, true} {
		name := "same epoch"
		if epochBump {
			name = "after an epoch bump"
		}
		t.Run(name, func(t *testing.T) {
			fs := faultstore.New(store.NewMemory())
			e := openEngine(t, &equeue.Options{Store: fs})
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			cl := kclient(t, serve(t, e, nil))
			init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			pid, epoch := init.ProducerID, init.ProducerEpoch

			fs.FailWrites(1)
			failed := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
			require.Equal(t, int16(56), failed.ErrorCode, "KAFKA_STORAGE_ERROR")
			ahead := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
			assert.Equal(t, int16(45), ahead.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER: the failed batch comes first")
			assert.Equal(t, int64(-1), ahead.BaseOffset)

			want := []string{"a", "b", "c"}
			if epochBump {
				// The producer bumps its epoch (KIP-360, as franz-go does
				// after OUT_OF_ORDER_SEQUENCE_NUMBER): the new epoch
				// starts at 0, whatever the failed batch's was.
				epoch++
				late := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
				assert.Equal(t, int16(45), late.ErrorCode, "a new epoch starts at sequence 0")
			}
			retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
			require.Equal(t, int16(0), retry.ErrorCode)
			assert.Equal(t, int64(0), retry.BaseOffset)
			next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
			require.Equal(t, int16(0), next.ErrorCode)
			assert.Equal(t, int64(2), next.BaseOffset)

			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
			require.NoError(t, err)
			var bodies []string
			for _, m := range res.Messages {
				bodies = append(bodies, string(m.Body))
			}
			assert.Equal(t, want, bodies, "in the producer's order, each once")
		})
	}
}

// TestProduce_IdempotentFirstBatchToAMissingPartitionLeavesNoState: a
// producer's first batch to a partition or a topic that does not exist
// leaves no sequence state behind (a client naming topics and partitions
// that do not exist costs nothing), while one whose first batch failed on
// the store keeps the state that orders its next batch after it.
func TestProduce_IdempotentFirstBatchToAMissingPartitionLeavesNoState(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s, err := kafka.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, kafka.ErrServerClosed)
	})
	cl := kclient(t, lis.Addr().String())
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	assert.Equal(t, int16(3), produceRaw(ctx, t, cl, "t", 7, rawBatch(pid, epoch, 0, "a")).ErrorCode, "UNKNOWN_TOPIC_OR_PARTITION")
	assert.Equal(t, int16(3), produceRaw(ctx, t, cl, "gone", 0, rawBatch(pid, epoch, 5, "a")).ErrorCode, "UNKNOWN_TOPIC_OR_PARTITION")
	assert.Zero(t, kafka.ProducerStates(s, "t"))
	assert.Zero(t, kafka.ProducerStates(s, "gone"))

	fs.FailWrites(1)
	assert.Equal(t, int16(56), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a")).ErrorCode, "KAFKA_STORAGE_ERROR")
	assert.Equal(t, 1, kafka.ProducerStates(s, "t"), "the failed first batch is remembered")
}
