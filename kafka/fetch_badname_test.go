package kafka_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetch_NameNoTopicCanHaveIsUnknown: Kafka's Fetch answers a partition
// of a topic it does not have UNKNOWN_TOPIC_OR_PARTITION, whatever the
// name; a name no topic can have here (longer than 127 characters, a
// character outside [A-Za-z0-9._-]) was answered INVALID_TOPIC_EXCEPTION.
func TestFetch_NameNoTopicCanHaveIsUnknown(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	// Straight to the broker: kgo's sharding would stop at Metadata.
	br := kclient(t, addr).SeedBrokers()[0]
	for _, name := range []string{strings.Repeat("a", 200), "no/slash", "ok-but-missing"} {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.LogStartOffset, fp.CurrentLeaderEpoch = 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(testCtx(t), br)
		require.NoError(t, err)
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1)
		assert.ErrorIs(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), kerr.UnknownTopicOrPartition, "%.20s", name)
	}
}
