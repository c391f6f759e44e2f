package kafka_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// failingPulls is an engine whose pulls fail while fail is set.
type failingPulls struct {
	*equeue.Engine
	fail atomic.Bool
}

func (b *failingPulls) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if b.fail.Load() {
		return equeue.PullResult{}, errors.New("injected read failure")
	}
	return b.Engine.Pull(ctx, req)
}

// TestProduce_RebuildThatCannotReadRefusesTheBatch: when the listener
// cannot read the partition back for a producer it knows nothing of (a
// read failure, or its connection closing under the read, as a listener's
// Close does), the batch is refused with a code clients retry and nothing
// is stored: its records may be stored already, and the read was to tell.
// Before, the batch was taken as it came: a retry of records stored
// before a restart was stored again.
func TestProduce_RebuildThatCannotReadRefusesTheBatch(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const pid, epoch = int64(7013), int16(0)
	values := []string{"a", "b", "c"}
	var msgs []*equeue.Message
	for seq, v := range values {
		msgs = append(msgs, &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, int32(seq)), Body: []byte(v), BornAt: time.UnixMilli(1_700_000_000_000)})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
	require.NoError(t, err)

	b := &failingPulls{Engine: e}
	b.fail.Store(true)
	cl := kclient(t, serve(t, b, nil))
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, values...))
	assert.Equal(t, kerr.KafkaStorageError, kerr.ErrorForCode(retry.ErrorCode), "refused, to be retried")
	assert.Equal(t, int64(3), storedCount(t, e, "t"), "nothing stored")

	b.fail.Store(false)
	retry = produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, values...))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "acknowledged where it was stored")
	assert.Equal(t, int64(3), storedCount(t, e, "t"), "stored once")
}
