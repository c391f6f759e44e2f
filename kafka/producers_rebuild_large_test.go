package kafka_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_RebuiltStateResumesALargeBatchCutOffByARestart: a batch of
// 3,000 records of which the listener stored the first 2,000 before it
// restarted is resumed after the restart: the listener reads back as many
// records before the producer's last as the batch has. Before, it read
// back 1,024 (equeue.MaxPullBatch), found the producer's last record but
// not the batch's first, and refused the retry OUT_OF_ORDER_SEQUENCE_NUMBER
// (franz-go then sends it again under a new epoch, storing the 2,000
// twice).
func TestProduce_RebuiltStateResumesALargeBatchCutOffByARestart(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7003), int16(0)
	const size, cut = 3000, 2000
	values := make([]string, size)
	for i := range values {
		values[i] = fmt.Sprintf("v%d", i)
	}
	// A batch of sequences 0-1, then the first 2,000 records of one of
	// sequences 2-3001, as the listener stored them.
	var msgs []*equeue.Message
	for seq, body := range append([]string{"p0", "p1"}, values[:cut]...) {
		msgs = append(msgs, &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, int32(seq)), Body: []byte(body), BornAt: time.UnixMilli(1_700_000_000_000)})
	}
	for len(msgs) > 0 {
		n := min(len(msgs), 500)
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs[:n]})
		require.NoError(t, err)
		msgs = msgs[n:]
	}

	b := &pullCounting{Engine: e}
	cl := kclient(t, serve(t, b, nil))
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, values...))
	require.Equal(t, int16(0), retry.ErrorCode, "the retry of the batch cut off is taken")
	assert.Equal(t, int64(2), retry.BaseOffset, "acknowledged at the batch's first offset")
	t.Logf("records read back for the batch: %d", b.read.Load())
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2+size, "next"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(2+size), next.BaseOffset)
	assert.Equal(t, int64(2+size+1), storedCount(t, e, "t"), "each record stored once")
}
