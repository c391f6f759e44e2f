package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestProduce_BadCompressionIsRefusedForGood: a batch compressed with a
// codec the listener does not know is refused with
// UNSUPPORTED_COMPRESSION_TYPE, and one whose compressed records do not
// decode with INVALID_RECORD: both stored nothing, and neither is retried
// by clients, since the same batch fails the same way again. Before, both
// were answered CORRUPT_MESSAGE, which the Java client retries until its
// delivery timeout. A CRC mismatch, which a batch damaged in transit has,
// stays CORRUPT_MESSAGE (TestProduce_MalformedBatchesAreRefusedAsKafkaDoes).
func TestProduce_BadCompressionIsRefusedForGood(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	garbage := []byte("these bytes are no codec's output")
	for codec := int16(1); codec <= 7; codec++ {
		h := nonIdempotent(1)
		h.attrs = codec
		got := produceRaw(ctx, t, cl, "t", 0, rawBatchOf(h, garbage))
		want := kerr.InvalidRecord
		if codec > 4 {
			want = kerr.UnsupportedCompressionType
		}
		err := kerr.ErrorForCode(got.ErrorCode)
		assert.Equal(t, want, err, "codec %d", codec)
		assert.False(t, kerr.IsRetriable(err), "codec %d: %v is not retried", codec, err)
		if assert.NotNil(t, got.ErrorMessage, "codec %d", codec) && codec > 4 {
			assert.Contains(t, *got.ErrorMessage, fmt.Sprintf("codec %d", codec))
		}
	}
	assert.Zero(t, storedCount(t, e, "t"), "nothing stored")
}

// TestProduce_ZstdNeedsProduceV7: as Kafka, a zstd batch in a Produce older
// than v7 (a client that negotiated an older version may not frame zstd as
// Kafka defines it) is refused with UNSUPPORTED_COMPRESSION_TYPE and stores
// nothing; from v7 the same bytes reach the decoder (here they are no zstd
// output, so INVALID_RECORD), and a real zstd batch is stored.
func TestProduce_ZstdNeedsProduceV7(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	h := nonIdempotent(1)
	h.attrs = 4 // zstd
	batch := rawBatchOf(h, []byte("no zstd frame"))

	old := kclient(t, addr, kgo.MaxVersions(kversion.V2_0_0())) // Produce v6
	got := produceRaw(ctx, t, old, "t", 0, batch)
	assert.Equal(t, kerr.UnsupportedCompressionType, kerr.ErrorForCode(got.ErrorCode)) // (v6 answers carry no message)

	cur := kclient(t, addr)
	got = produceRaw(ctx, t, cur, "t", 0, batch)
	assert.Equal(t, kerr.InvalidRecord, kerr.ErrorForCode(got.ErrorCode), "v7 and later decode it")
	assert.Zero(t, storedCount(t, e, "t"), "nothing stored")

	zstd := kclient(t, addr, kgo.DefaultProduceTopic("t"), kgo.ProducerBatchCompression(kgo.ZstdCompression()), kgo.ProducerLinger(0))
	require.NoError(t, zstd.ProduceSync(ctx, &kgo.Record{Value: []byte("zstd value")}).FirstErr())
	assert.Equal(t, int64(1), storedCount(t, e, "t"))
}
