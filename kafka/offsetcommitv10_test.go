package kafka_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestOffsetCommit_V10: the listener serves OffsetCommit v10 (Kafka 4.2,
// KIP-848), which names each topic by its ID (the one Metadata gives), and
// advertises it. The answer names each topic by the ID it was asked with;
// an ID no topic has (one that never was, or the ID of a topic deleted
// and created again since) gets UNKNOWN_TOPIC_ID on every partition of
// it, the request's other topics being committed. A KIP-848 member is
// checked as at v9, a classic group's member as at v8. Before, the
// listener served up to v9 and closed the connection of a v10 request.
func TestOffsetCommit_V10(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1, "u": 2})
	ctx := testCtx(t)
	for _, topic := range []string{"t", "u"} {
		for range 5 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	b := kclient(t, addr).SeedBrokers()[0]
	resp, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	require.NoError(t, err)
	var advertised kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 8 {
			advertised = k
		}
	}
	assert.Equal(t, int16(10), advertised.MaxVersion, "OffsetCommit v10 advertised")

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	correlation := int32(0)
	// commit sends one v10 commit of offset to partition 0 of each topic
	// ID and returns each topic's codes by ID, in the order asked.
	commit := func(group, member string, generation int32, offset int64, ids ...[16]byte) [][]int16 {
		t.Helper()
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.SetVersion(10)
		oc.Group, oc.Generation, oc.MemberID = group, generation, member
		for _, id := range ids {
			oct := kmsg.NewOffsetCommitRequestTopic()
			oct.TopicID = id
			oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
			oc.Topics = append(oc.Topics, oct)
		}
		correlation++
		resp, err := requestAt(t, nc, correlation, oc)
		require.NoError(t, err, "OffsetCommit v10 answered")
		r := resp.(*kmsg.OffsetCommitResponse)
		require.Len(t, r.Topics, len(ids))
		var codes [][]int16
		for i, rt := range r.Topics {
			assert.Equal(t, ids[i], rt.TopicID, "the answer names the topic by the ID asked with")
			var cs []int16
			for _, rp := range rt.Partitions {
				cs = append(cs, rp.ErrorCode)
			}
			codes = append(codes, cs)
		}
		return codes
	}
	offsetsOf := func(group string) map[equeue.QueueRef]int64 {
		t.Helper()
		offs, err := e.GroupOffsets(ctx, group)
		require.NoError(t, err)
		return offs
	}
	tid, uid := topicIDOf(ctx, t, b, "t"), topicIDOf(ctx, t, b, "u")
	unknown := [16]byte{1, 2, 3}

	// A group with no members: topics by ID, an unknown one beside them.
	assert.Equal(t, [][]int16{{0}, {kerr.UnknownTopicID.Code}, {0}}, commit("lone", "", -1, 2, tid, unknown, uid))
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 2, {Topic: "u", Queue: 0}: 2}, offsetsOf("lone"))

	// A topic deleted and created again has a new ID: the old one is
	// no topic's any more.
	require.NoError(t, e.DeleteTopic(ctx, "u"))
	require.NoError(t, e.CreateTopic(ctx, "u", 2))
	for range 5 {
		_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	newUID := topicIDOf(ctx, t, b, "u")
	require.NotEqual(t, uid, newUID)
	assert.Equal(t, [][]int16{{kerr.UnknownTopicID.Code}}, commit("lone", "", -1, 1, uid), "the ID of the topic deleted")
	assert.Equal(t, [][]int16{{0}}, commit("lone", "", -1, 1, newUID), "the ID of the topic created again")

	// A KIP-848 member: checked as at v9.
	m := &cgMember{t: t, b: b, group: "cg", id: "m"}
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0}, m.owned)
	assert.Equal(t, [][]int16{{kerr.UnknownMemberID.Code}}, commit("cg", "stranger", m.epoch, 3, tid), "a member the group does not know")
	assert.Equal(t, [][]int16{{0}, {kerr.StaleMemberEpoch.Code}}, commit("cg", m.id, m.epoch, 3, tid, newUID), "its own partition, and one it does not hold")
	assert.Equal(t, [][]int16{{kerr.FencedMemberEpoch.Code}}, commit("cg", m.id, m.epoch+1, 4, tid), "an epoch the member was never given")
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}, offsetsOf("cg"))

	// A classic group: checked as at v8.
	j := joinAlone(ctx, t, b, "g")
	assert.Equal(t, [][]int16{{kerr.IllegalGeneration.Code}}, commit("g", j.MemberID, j.Generation-1, 4, tid), "stale generation")
	assert.Equal(t, [][]int16{{0}}, commit("g", j.MemberID, j.Generation, 4, tid), "the member of the generation")
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 4}, offsetsOf("g"))
}
