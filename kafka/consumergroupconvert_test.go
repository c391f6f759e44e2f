package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestConsumerGroup_JoinConvertsAnEmptyClassicGroup: a KIP-848 member
// that joins a name whose classic group is empty makes it a KIP-848
// group, as Kafka converts an empty classic group: the classic group and
// what it held (a member ID given out with MEMBER_ID_REQUIRED) are gone,
// its committed offsets stay. A classic group with members still refuses
// the join (GROUP_ID_NOT_FOUND). Before, the empty classic group was kept
// beside the KIP-848 group, and a join with the ID it gave out made a
// member of it once the KIP-848 group emptied.
func TestConsumerGroup_JoinConvertsAnEmptyClassicGroup(t *testing.T) {
	kafka.SetEmptyGroupKeep(t, time.Minute)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	s, addr := serveServer(t, e)
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	classicJoin := func(id string) *kmsg.JoinGroupResponse {
		t.Helper()
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.MemberID, jg.ProtocolType = "g", id, "consumer"
		jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 30000, 30000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp, err := b.Request(ctx, jg)
		require.NoError(t, err)
		return resp.(*kmsg.JoinGroupResponse)
	}

	// A classic member commits and leaves; a join is given an ID it does
	// not use yet.
	j := joinAlone(ctx, t, b, "g")
	require.Equal(t, int16(0), commitOne(ctx, t, b, j.Generation, j.MemberID, 2))
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group, lg.MemberID = "g", j.MemberID
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
	lresp, err := b.Request(ctx, lg)
	require.NoError(t, err)
	require.Equal(t, int16(0), lresp.(*kmsg.LeaveGroupResponse).Members[0].ErrorCode)
	pending := classicJoin("")
	require.Equal(t, int16(79), pending.ErrorCode, "MEMBER_ID_REQUIRED")
	require.Equal(t, 1, kafka.PendingMembers(s, "g"))

	// A KIP-848 member joins: the group is a KIP-848 one, with the
	// classic group's offsets.
	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	assert.Equal(t, []int32{0}, a.owned)
	assert.Zero(t, kafka.PendingMembers(s, "g"), "the classic group is gone")
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(2), offs[equeue.QueueRef{Topic: "t", Queue: 0}], "its offsets stay")
	require.Equal(t, int16(0), commitOne(ctx, t, b, a.epoch, a.id, 3))
	assert.Equal(t, int16(23), classicJoin("").ErrorCode, "INCONSISTENT_GROUP_PROTOCOL: a KIP-848 group with members")

	// Once a left, the ID the classic group gave out makes no member.
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: a.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)
	assert.Equal(t, int16(25), classicJoin(pending.MemberID).ErrorCode, "UNKNOWN_MEMBER_ID: given out by a group since converted")

	// A classic group with members refuses a KIP-848 join.
	h := joinAlone(ctx, t, b, "h")
	require.Equal(t, int16(0), h.ErrorCode)
	clash := &cgMember{t: t, b: b, group: "h", id: "member-x"}
	assert.Equal(t, int16(69), clash.beat(ctx, tid, []string{"t"}, false).ErrorCode, "GROUP_ID_NOT_FOUND: h has members")
}
