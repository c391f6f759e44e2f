package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProduce_RetryStoredBeyondTheReadIsADuplicate: a producer has five
// batches in flight to a busy partition, the first stored far behind the
// others (other producers stored more records between them than the
// listener reads back to learn a producer's state: 16,384). A restarted
// listener learns the producer's last sequence number from its last
// records; the retry of the first batch, whose sequence numbers lie
// behind that last one, so stored, but beyond the read, is answered
// DUPLICATE_SEQUENCE_NUMBER, which clients take for stored (its offset
// unknown), and nothing is stored again; the retries the read reaches
// are acknowledged where they were stored. Before, the first batch's
// retry was refused OUT_OF_ORDER_SEQUENCE_NUMBER, and franz-go then sent
// every batch in flight again under a new epoch, storing them twice.
func TestProduce_RetryStoredBeyondTheReadIsADuplicate(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7301), int16(0)
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
	first := kclient(t, serve(t, e, nil))
	bases := make([]int64, 5)
	for b := range 5 {
		got := produceRaw(ctx, t, first, "t", 0, rawBatch(pid, epoch, int32(2*b), fmt.Sprint("b", b, "-0"), fmt.Sprint("b", b, "-1")))
		require.Equal(t, int16(0), got.ErrorCode, "batch %d", b)
		bases[b] = got.BaseOffset
		if b == 0 {
			busy(20_000) // the partition is busy while the first batch's answer is lost
		} else {
			busy(10)
		}
	}
	stored := storedCount(t, e, "t")

	again := kclient(t, serve(t, e, nil))
	for _, b := range []int{0, 1, 2, 3, 4} {
		got := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, int32(2*b), fmt.Sprint("b", b, "-0"), fmt.Sprint("b", b, "-1")))
		if b == 0 {
			assert.Equal(t, int16(46), got.ErrorCode, "batch 0: DUPLICATE_SEQUENCE_NUMBER")
			continue
		}
		require.Equal(t, int16(0), got.ErrorCode, "batch %d", b)
		assert.Equal(t, bases[b], got.BaseOffset, "batch %d acknowledged where it was stored", b)
	}
	assert.Equal(t, stored, storedCount(t, e, "t"), "nothing stored again")

	// A batch that straddles the last one stored (some of its records
	// stored, some not, and not found) is no duplicate: refused.
	straddle := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 9, "x", "y"))
	assert.Equal(t, int16(45), straddle.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER")
	next := produceRaw(ctx, t, again, "t", 0, rawBatch(pid, epoch, 10, "next"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, stored, next.BaseOffset)
}
