package kafka_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProduce_NameNoTopicCanHaveIsUnknown: Kafka's Produce, as its Fetch
// and ListOffsets (TestFetch_NameNoTopicCanHaveIsUnknown), does not check
// topic names: a partition of a topic it does not have is answered
// UNKNOWN_TOPIC_OR_PARTITION, whatever the name. A name no topic can have
// here (longer than 127 characters, a character outside [A-Za-z0-9._-])
// was answered INVALID_TOPIC_EXCEPTION, from an idempotent producer too.
func TestProduce_NameNoTopicCanHaveIsUnknown(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	cl := kclient(t, addr)
	ctx := testCtx(t)
	for _, name := range []string{strings.Repeat("a", 200), "no/slash", "ok-but-missing"} {
		for _, b := range [][]byte{rawBatch(-1, -1, -1, "a"), rawBatch(7, 0, 0, "a")} {
			got := produceRaw(ctx, t, cl, name, 0, b)
			assert.ErrorIs(t, kerr.ErrorForCode(got.ErrorCode), kerr.UnknownTopicOrPartition, "%.20s", name)
			assert.Equal(t, int64(-1), got.BaseOffset, "%.20s", name)
		}
	}
}
