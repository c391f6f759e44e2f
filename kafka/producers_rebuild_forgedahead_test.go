package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_RebuildIgnoresANativeMessageNamedAheadOfAProducer: a
// native message whose ID reads as a Kafka producer's record of a later
// sequence number, or of a later epoch, was taken for the producer's by
// the state rebuilt after a restart: the producer's next batch was then
// refused (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH), and the
// producer failed. Only records the listener itself stored move the
// rebuilt state: the next batch is stored.
func TestProduce_RebuildIgnoresANativeMessageNamedAheadOfAProducer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forged func(pid int64, epoch int16) string
	}{
		{"later sequence", func(pid int64, epoch int16) string { return fmt.Sprintf("kafka-%d-%d-0-7", pid, epoch) }},
		{"later epoch", func(pid int64, epoch int16) string { return fmt.Sprintf("kafka-%d-%d-0-0", pid, epoch+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			r := &restartable{t: t, dir: t.TempDir()}
			r.start()
			t.Cleanup(r.stop)
			require.NoError(t, r.engine().CreateTopic(ctx, "t", 1))
			cl := kclient(t, r.addr)
			init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Equal(t, int16(0), init.ErrorCode)
			pid, epoch := init.ProducerID, init.ProducerEpoch
			require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
			cl.Close()
			forged := &equeue.Message{ID: tc.forged(pid, epoch), Body: []byte("forged")}
			_, err = r.engine().Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{forged}})
			require.NoError(t, err)

			r.stop()
			r.start()
			cl = kclient(t, r.addr)
			got := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
			require.Equal(t, int16(0), got.ErrorCode, "the producer's next batch is stored")
			assert.Equal(t, int64(3), got.BaseOffset)
			// A retry of the batch is still known stored.
			again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
			require.Equal(t, int16(0), again.ErrorCode)
			assert.Equal(t, int64(0), again.BaseOffset)

			res, err := r.engine().Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
			require.NoError(t, err)
			var bodies []string
			for _, m := range res.Messages {
				bodies = append(bodies, string(m.Body))
			}
			assert.Equal(t, []string{"a", "b", "forged", "c"}, bodies)
		})
	}
}

// TestProduce_RebuildWithAKeyIgnoresRecordsMarkedWithoutIt: with
// Options.ProducerRecordKey set, a native message whose ID carries the
// mark the built-in key gives (which anyone knowing the form can make)
// is not read as the producer's record either, and the listener's own
// records, marked under the key, still are.
func TestProduce_RebuildWithAKeyIgnoresRecordsMarkedWithoutIt(t *testing.T) {
	ctx := testCtx(t)
	r := &restartable{t: t, dir: t.TempDir(), opts: &kafka.Options{ProducerRecordKey: []byte("a secret of this deployment")}}
	r.start()
	t.Cleanup(r.stop)
	require.NoError(t, r.engine().CreateTopic(ctx, "t", 1))
	cl := kclient(t, r.addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
	cl.Close()
	forged := &equeue.Message{ID: kafka.ProducerRecordID("t", pid, epoch, 0, 7), Body: []byte("forged")}
	_, err = r.engine().Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{forged}})
	require.NoError(t, err)

	r.stop()
	r.start()
	cl = kclient(t, r.addr)
	again := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b"))
	require.Equal(t, int16(0), again.ErrorCode)
	assert.Equal(t, int64(0), again.BaseOffset, "the retry is acknowledged where it was stored")
	got := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c"))
	require.Equal(t, int16(0), got.ErrorCode, "the producer's next batch is stored")
	assert.Equal(t, int64(3), got.BaseOffset)
	assert.Equal(t, int64(4), storedCount(t, r.engine(), "t"))
}
