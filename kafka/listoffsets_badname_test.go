package kafka_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListOffsets_NameNoTopicCanHaveIsUnknown: Kafka's ListOffsets does not
// check topic names; a partition of a topic it does not have is answered
// UNKNOWN_TOPIC_OR_PARTITION, whatever the name. A name no topic can have
// here (longer than the engine's 127 characters, or with a character
// outside [A-Za-z0-9._-]) was answered INVALID_TOPIC_EXCEPTION.
func TestListOffsets_NameNoTopicCanHaveIsUnknown(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	// Straight to the broker: kgo's sharding would stop at Metadata.
	br := kclient(t, addr).SeedBrokers()[0]
	for _, name := range []string{strings.Repeat("a", 200), "no/slash", "ok-but-missing"} {
		for _, ts := range []int64{-1, -2, 0} {
			req := kmsg.NewPtrListOffsetsRequest()
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = name
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = 0, ts
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(testCtx(t), br)
			require.NoError(t, err)
			require.Len(t, resp.Topics, 1)
			require.Len(t, resp.Topics[0].Partitions, 1)
			p := resp.Topics[0].Partitions[0]
			assert.ErrorIs(t, kerr.ErrorForCode(p.ErrorCode), kerr.UnknownTopicOrPartition, "%.20s at %d", name, ts)
			assert.Equal(t, int64(-1), p.Offset, "%.20s at %d", name, ts)
		}
	}
}
