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

// TestOffsetCommit_KIP848MemberBelowV9: a member of a KIP-848 group that
// commits with an OffsetCommit below v9 gets UNSUPPORTED_VERSION on every
// partition and stores nothing, as from Kafka: those versions carry a
// generation, not a member epoch, so the commit cannot be fenced. A
// member ID the group does not know is still UNKNOWN_MEMBER_ID (Kafka
// looks the member up first); the same member commits at v9; a classic
// group still commits below v9, and so does a commit without a generation
// to a group with no members. Before, the listener took the old versions'
// commits of such a member, checked as at v9.
func TestOffsetCommit_KIP848MemberBelowV9(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	b := kclient(t, addr).SeedBrokers()[0]
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	correlation := int32(0)
	commit := func(version int16, group, member string, generation int32, offset int64) []int16 {
		t.Helper()
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.SetVersion(version)
		oc.Group, oc.Generation, oc.MemberID = group, generation, member
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "t"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		correlation++
		resp, err := requestAt(t, nc, correlation, oc)
		require.NoError(t, err, "OffsetCommit v%d answered", version)
		var codes []int16
		for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
			for _, rp := range rt.Partitions {
				codes = append(codes, rp.ErrorCode)
			}
		}
		return codes
	}
	offsetOf := func(group string) map[equeue.QueueRef]int64 {
		t.Helper()
		offs, err := e.GroupOffsets(ctx, group)
		require.NoError(t, err)
		return offs
	}

	tid := topicIDOf(ctx, t, b, "t")
	m := &cgMember{t: t, b: b, group: "cg", id: "m"}
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0}, m.owned)

	for _, v := range []int16{2, 5, 7, 8} {
		assert.Equal(t, []int16{kerr.UnsupportedVersion.Code}, commit(v, "cg", m.id, m.epoch, 1), "v%d of a KIP-848 member", v)
		assert.Equal(t, []int16{kerr.UnknownMemberID.Code}, commit(v, "cg", "stranger", m.epoch, 1), "v%d of a member the group does not know", v)
	}
	assert.Empty(t, offsetOf("cg"), "nothing stored below v9")
	assert.Equal(t, []int16{0}, commit(9, "cg", m.id, m.epoch, 3), "the same member at v9")
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}, offsetOf("cg"))

	j := joinAlone(ctx, t, b, "g")
	assert.Equal(t, []int16{0}, commit(8, "g", j.MemberID, j.Generation, 4), "a classic member at v8")
	assert.Equal(t, []int16{0}, commit(8, "lone", "", -1, 2), "a commit without a generation to a group with no members")
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 4}, offsetOf("g"))
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 2}, offsetOf("lone"))
}
