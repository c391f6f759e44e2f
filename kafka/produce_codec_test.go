package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
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
