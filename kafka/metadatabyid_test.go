package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestMetadata_TopicsByID: Metadata v12 names topics by ID (KIP-516), as
// Kafka serves it: a topic asked for by its ID (the one Metadata gives)
// is described under its name, an ID no topic has (that of a topic
// deleted since too) gets UNKNOWN_TOPIC_ID, the ID asked with and no
// name. franz-go resolves the topic IDs of an OffsetFetch v10 answer so,
// and kadm's fetch of all of a group's offsets names their topics by it.
// Before, a topic asked for by ID was taken for one with an empty name,
// INVALID_TOPIC_EXCEPTION, and kadm left the group's offsets unnamed.
func TestMetadata_TopicsByID(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2, "u": 1})
	ctx := testCtx(t)
	b := kclient(t, addr).SeedBrokers()[0]
	tid, uid := topicIDOf(ctx, t, b, "t"), topicIDOf(ctx, t, b, "u")
	require.NoError(t, e.DeleteTopic(ctx, "u"))
	unknown := [16]byte{1, 2, 3}

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	for _, id := range [][16]byte{tid, unknown, uid} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.TopicID = id
		md.Topics = append(md.Topics, mt)
	}
	resp, err := b.Request(ctx, md)
	require.NoError(t, err)
	byID := map[[16]byte]kmsg.MetadataResponseTopic{}
	for _, rt := range resp.(*kmsg.MetadataResponse).Topics {
		byID[rt.TopicID] = rt
	}
	require.Len(t, byID, 3)
	assert.Equal(t, int16(0), byID[tid].ErrorCode)
	assert.Equal(t, kmsg.StringPtr("t"), byID[tid].Topic)
	assert.Len(t, byID[tid].Partitions, 2)
	for _, id := range [][16]byte{unknown, uid} {
		assert.Equal(t, kerr.UnknownTopicID.Code, byID[id].ErrorCode)
		assert.Nil(t, byID[id].Topic)
		assert.Empty(t, byID[id].Partitions)
	}

	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("x")}, {Body: []byte("y")}}})
	require.NoError(t, err)
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 1}: 2}))
	fetched, err := kadmin(t, addr).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	o, ok := fetched.Lookup("t", 1)
	require.True(t, ok, "kadm names the topic of the group's offset: %v", fetched)
	assert.Equal(t, kadm.OffsetResponse{Offset: kadm.Offset{Topic: "t", TopicID: kadm.TopicID(tid), Partition: 1, At: 2, LeaderEpoch: -1}}, o)
}
