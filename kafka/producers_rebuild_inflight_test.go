package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RebuiltStateKnowsEveryBatchInFlight: a producer with
// several batches in flight (franz-go has up to five) whose answers a
// restart of the listener lost sends them all again, from the first, to
// the new listener: each is acknowledged where it was stored, and none
// stored again, though the producer stored more records after the first
// than one read back from its last record reaches, and other producers'
// records lie between its batches. Before, the new listener read back
// only as many records as the retried batch has (1,024 at least), did not
// find the first batch, refused it OUT_OF_ORDER_SEQUENCE_NUMBER, and
// franz-go sent every record again under a new epoch: all stored twice.
func TestProduce_RebuiltStateKnowsEveryBatchInFlight(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7005), int16(0)
	const batches, size, between = 5, 300, 100
	values := func(b int) []string {
		out := make([]string, size)
		for i := range out {
			out[i] = fmt.Sprintf("b%d-%d", b, i)
		}
		return out
	}
	first := kclient(t, serve(t, e, nil))
	bases := make([]int64, batches)
	for b := range batches {
		got := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, int32(b*size), values(b)...))
		require.Equal(t, int16(0), got.ErrorCode, "batch %d", b)
		bases[b] = got.BaseOffset
		others := make([]*equeue.Message, between)
		for i := range others {
			others[i] = &equeue.Message{Body: []byte("other")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: others})
		require.NoError(t, err)
	}
	stored := storedCount(t, e, "t")
	require.Equal(t, int64(batches*(size+between)), stored)

	// Listeners that know nothing of the producer: its answers were
	// lost. The retries come oldest first, or (on a connection of their
	// own each) the last batch's before the first's.
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 0, 1, 2, 3}} {
		again := kclient(t, serve(t, e, nil))
		for _, b := range order {
			got := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, int32(b*size), values(b)...))
			require.Equal(t, int16(0), got.ErrorCode, "order %v: the retry of batch %d is taken", order, b)
			assert.Equal(t, bases[b], got.BaseOffset, "order %v: batch %d acknowledged where it was stored", order, b)
		}
		assert.Equal(t, stored, storedCount(t, e, "t"), "order %v: nothing stored again", order)
	}
	again := kclient(t, serve(t, e, nil))
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, batches*size, "next"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, stored, next.BaseOffset)
}

// TestProduce_RebuiltStateKnowsABatchLargerThanThePartitionsRead: the
// retry, after a restart of the listener, of a batch of more records than
// the listener reads of a partition's last ones to learn its producers
// (16,384) is acknowledged where it was stored: the producer's own
// records are read back as far as its batch reaches. Before, its first
// record was not read, and the retry was refused
// OUT_OF_ORDER_SEQUENCE_NUMBER (franz-go then stores it again under a
// new epoch).
func TestProduce_RebuiltStateKnowsABatchLargerThanThePartitionsRead(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch, size = int64(7017), int16(0), 17_000
	values := make([]string, size)
	for i := range values {
		values[i] = fmt.Sprintf("v%d", i)
	}
	first := produceRaw(ctx, t, kclient(t, serve(t, e, nil)), "t", 0, rawBatch(pid, epoch, 0, values...))
	require.Equal(t, int16(0), first.ErrorCode)
	retry := produceRaw(ctx, t, kclient(t, serve(t, e, nil)), "t", 0, rawBatch(pid, epoch, 0, values...))
	require.Equal(t, int16(0), retry.ErrorCode, "the retry is taken")
	assert.Equal(t, first.BaseOffset, retry.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, int64(size), storedCount(t, e, "t"), "stored once")
}
