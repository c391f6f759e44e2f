package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request a follower refuses, and every request that needs a right,
// has an answer of its kind: refusing never closes the connection.
func TestRefuse_AnswersEveryRefusedKind(t *testing.T) {
	keys := map[int16]bool{}
	for k := range servedByLeaderOnly {
		keys[k] = true
	}
	for k, v := range supported {
		if v.need != 0 {
			keys[k] = true
		}
	}
	c := &conn{}
	for k := range keys {
		req := kmsg.RequestForKey(k)
		require.NotNil(t, req, "key %d", k)
		for _, r := range []refusal{denial, notLeading} {
			resp, err := c.refuse(req, r)
			require.NoError(t, err, "%s", kmsg.NameForKey(k))
			assert.Equal(t, k, resp.Key(), "%s", kmsg.NameForKey(k))
		}
	}
}

// TestRefuse_ProducePartitionHasNoBaseOffset: a Produce refused for want
// of a right, or by a follower, answers each partition with base offset
// -1, as every refused partition is answered (producePartition): nothing
// was stored.
func TestRefuse_ProducePartitionHasNoBaseOffset(t *testing.T) {
	req := kmsg.NewPtrProduceRequest()
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0}, {Partition: 1}}
	req.Topics = append(req.Topics, rt)
	for _, r := range []refusal{denial, notLeading} {
		resp, err := (&conn{}).refuse(req, r)
		require.NoError(t, err)
		for _, p := range resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
			assert.Equal(t, r.topic, p.ErrorCode)
			assert.Equal(t, int64(-1), p.BaseOffset, "partition %d", p.Partition)
		}
	}
}

// TestRefuse_OffsetCommitV10AnswersByTopicID: a refused OffsetCommit
// names each topic of its answer by the ID it was asked with, as a served
// one does: at v10 the answer carries IDs, not names (TestOffsetCommit_V10).
func TestRefuse_OffsetCommitV10AnswersByTopicID(t *testing.T) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(10)
	for _, id := range [][16]byte{{1}, {2}} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = id
		rt.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
	}
	for _, r := range []refusal{denial, notLeading} {
		resp, err := (&conn{}).refuse(req, r)
		require.NoError(t, err)
		topics := resp.(*kmsg.OffsetCommitResponse).Topics
		require.Len(t, topics, 2)
		for i, rt := range topics {
			assert.Equal(t, req.Topics[i].TopicID, rt.TopicID)
			assert.Equal(t, r.group, rt.Partitions[0].ErrorCode)
		}
	}
}
