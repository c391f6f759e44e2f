package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestProduce_RebuildIgnoresANativeMessageNamedLikeAProducers: a native
// producer may give its message any ID, one too that reads as a Kafka
// producer's record (setIDs). After a restart, the state rebuilt from
// the partition took such a message for the producer's record of that
// sequence number: the producer's batch at it was acknowledged as a retry
// of records stored, or its first records were taken as stored by a try
// cut off, and were never stored. The batch must be stored, or refused;
// never acknowledged with records of it not stored.
func TestProduce_RebuildIgnoresANativeMessageNamedLikeAProducers(t *testing.T) {
	for _, values := range [][]string{{"c"}, {"c", "d"}} {
		t.Run(fmt.Sprintf("%d records", len(values)), func(t *testing.T) {
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
			// A native message whose ID reads as the producer's next record.
			forged := &equeue.Message{ID: fmt.Sprintf("kafka-%d-%d-0-2", pid, epoch), Body: []byte("forged")}
			_, err = r.engine().Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{forged}})
			require.NoError(t, err)

			r.stop()
			r.start()
			cl = kclient(t, r.addr)
			got := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, values...))

			res, err := r.engine().Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
			require.NoError(t, err)
			var bodies []string
			for _, m := range res.Messages {
				bodies = append(bodies, string(m.Body))
			}
			if got.ErrorCode != 0 {
				assert.Equal(t, []string{"a", "b", "forged"}, bodies, "a batch refused stores nothing")
				return
			}
			require.GreaterOrEqual(t, got.BaseOffset, int64(0))
			require.LessOrEqual(t, got.BaseOffset+int64(len(values)), int64(len(bodies)), "acknowledged at offsets %d.. of %v", got.BaseOffset, bodies)
			assert.Equal(t, values, bodies[got.BaseOffset:got.BaseOffset+int64(len(values))], "the records acknowledged are stored where the answer says")
		})
	}
}
