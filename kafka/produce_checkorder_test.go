package kafka_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestProduce_UnknownTopicIsAnsweredBeforeTheBatchIsChecked: as Kafka's
// broker (and kfake), a partition of a topic that does not exist, or
// beyond the topic's partitions, is answered UNKNOWN_TOPIC_OR_PARTITION
// whatever its batch holds: the batch is checked (CORRUPT_MESSAGE,
// INVALID_RECORD, UNSUPPORTED_FOR_MESSAGE_FORMAT,
// UNSUPPORTED_COMPRESSION_TYPE) only for a partition that exists. Before,
// the batch was decoded first, so a damaged one to a missing topic got
// CORRUPT_MESSAGE, which clients retry, for a topic they should look up
// again. Nothing is stored either way, and no topic is made.
func TestProduce_UnknownTopicIsAnsweredBeforeTheBatchIsChecked(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	old := kclient(t, addr, kgo.MaxVersions(kversion.V2_0_0())) // Produce v6

	oldFormat := rawBatch(-1, -1, -1, "a")
	oldFormat[16] = 1 // a v1 message set's magic
	binary.BigEndian.PutUint32(oldFormat[8:], 3)
	zstd := nonIdempotent(1)
	zstd.attrs = 4
	for _, tc := range []struct {
		name   string
		client *kgo.Client
		batch  []byte
		code   error // on the partition that exists
	}{
		{"CRC mismatch", cl, flipLast(rawBatch(-1, -1, -1, "a")), kerr.CorruptMessage},
		{"shorter than a batch header", cl, []byte{0, 1, 2}, kerr.CorruptMessage},
		{"record count of zero", cl, rawBatchOf(batchHeader{pid: -1, seq: -1}, nil), kerr.InvalidRecord},
		{"old message format", cl, oldFormat, kerr.UnsupportedForMessageFormat},
		{"zstd before Produce v7", old, rawBatchOf(zstd, []byte("no zstd frame")), kerr.UnsupportedCompressionType},
	} {
		for _, missing := range []struct {
			topic string
			part  int32
		}{{"missing", 0}, {"t", 1}, {"t", -1}} {
			got := produceRaw(ctx, t, tc.client, missing.topic, missing.part, tc.batch)
			assert.Equal(t, kerr.UnknownTopicOrPartition, kerr.ErrorForCode(got.ErrorCode), "%s to %s/%d", tc.name, missing.topic, missing.part)
			assert.Equal(t, int64(-1), got.BaseOffset, "%s to %s/%d", tc.name, missing.topic, missing.part)
		}
		got := produceRaw(ctx, t, tc.client, "t", 0, tc.batch)
		assert.Equal(t, tc.code, kerr.ErrorForCode(got.ErrorCode), "%s to t/0", tc.name)
		assert.Zero(t, storedCount(t, e, "t"), "%s: nothing stored", tc.name)
	}
	_, err := e.Topic(ctx, "missing")
	require.Error(t, err, "no topic made")
}
