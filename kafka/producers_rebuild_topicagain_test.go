package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RebuiltStateOfATopicMadeAgain: a restarted listener learns
// two idempotent producers' states from a topic's records (the retries
// of their last batches); the topic is then deleted outside the listener
// and made again under its name. The retries of their earlier batches
// are the new topic's first batches, stored there, as for a state the
// listener learned by storing batches
// (TestProduce_TopicMadeAgainIgnoresOldProducerStates). Before, a state
// learned from the records did not name its topic: the retry of a batch
// stored beyond the read was answered DUPLICATE_SEQUENCE_NUMBER, and one
// read acknowledged at the old topic's offset, both taken for stored
// while the new topic held none of their records.
func TestProduce_RebuiltStateOfATopicMadeAgain(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const far, near, epoch = int64(7501), int64(7502), int16(0)
	busy := func(n int) {
		for n > 0 {
			k := min(n, 1000)
			msgs := make([]*equeue.Message, k)
			for i := range msgs {
				msgs[i] = &equeue.Message{Body: []byte("other")}
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
			require.NoError(t, err)
			n -= k
		}
	}
	farA, farB := rawBatch(far, epoch, 0, "a0", "a1"), rawBatch(far, epoch, 2, "b0", "b1")
	nearC, nearD := rawBatch(near, epoch, 0, "c0", "c1"), rawBatch(near, epoch, 2, "d0", "d1")

	first := kclient(t, serve(t, e, nil))
	require.Equal(t, int16(0), produceRaw(ctx, t, first, "t", 0, farA).ErrorCode)
	busy(20_000) // farA lies beyond what a restarted listener reads
	for _, b := range [][]byte{farB, nearC, nearD} {
		require.Equal(t, int16(0), produceRaw(ctx, t, first, "t", 0, b).ErrorCode)
	}

	// A restarted listener learns both states from the partition's records.
	again := kclient(t, serve(t, e, nil))
	for _, b := range [][]byte{farB, nearD} {
		got := produceRaw(ctx, t, again, "t", 0, b)
		require.Equal(t, int16(0), got.ErrorCode)
		require.Greater(t, got.BaseOffset, int64(20_000), "acknowledged where it was stored")
	}

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	gotA := produceRaw(ctx, t, again, "t", 0, farA)
	assert.Equal(t, int16(0), gotA.ErrorCode, "not DUPLICATE_SEQUENCE_NUMBER: the new topic does not hold it")
	assert.Equal(t, int64(0), gotA.BaseOffset)
	gotC := produceRaw(ctx, t, again, "t", 0, nearC)
	assert.Equal(t, int16(0), gotC.ErrorCode)
	assert.Equal(t, int64(2), gotC.BaseOffset, "stored in the new topic, not acknowledged at the old one's offset")
	assert.Equal(t, int64(4), storedCount(t, e, "t"), "both batches are stored in the new topic")
}
