package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestGroups_NativeJoinIsRefusedWhileKafkaGroupHasMembers: a native
// consumer could join under the name of a Kafka group that had live
// members; from then on the Kafka members' commits were refused
// (GROUP_AUTHORIZATION_FAILED: the group had native members) and new
// Kafka members could not join. The reverse is refused
// (TestGroups_NativeGroupNameIsRefusedWithoutMembers); now so is this:
// while a Kafka group of that name has members (classic or KIP-848), a
// native join gets equeue.ErrGroupNameTaken, creates nothing, and the
// Kafka members go on committing. Once the last Kafka member left the
// name is free for a native group.
func TestGroups_NativeJoinIsRefusedWhileKafkaGroupHasMembers(t *testing.T) {
	e, addr := setup(t, map[string]int{"payments": 1})
	ctx := testCtx(t)
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "payments", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	b := kclient(t, addr).SeedBrokers()[0]
	nativeJoin := func(group string) error {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: "native",
			Subscriptions: []equeue.Subscription{{Topic: "payments"}}, From: equeue.ConsumeFromEarliest})
		return err
	}

	// A classic member, Stable.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "billing", 30000, 1000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	j := requestJoin(ctx, t, b, jg)
	require.Equal(t, int16(0), j.ErrorCode)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = "billing", j.MemberID, j.Generation
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte{}}}
	resp, err := b.Request(ctx, sg)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.(*kmsg.SyncGroupResponse).ErrorCode)
	commit := func(offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = "billing", j.MemberID, j.Generation
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "payments"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, int16(0), commit(1))

	err = nativeJoin("billing")
	require.ErrorIs(t, err, equeue.ErrGroupNameTaken, "a classic Kafka group with a member")
	gi, gerr := e.Group(ctx, "billing")
	require.NoError(t, gerr)
	assert.Empty(t, gi.Members, "no native member")
	assert.Empty(t, gi.Subscriptions, "nor subscriptions")
	assert.Equal(t, int16(0), commit(3), "the Kafka member still commits")

	// A KIP-848 member of another group.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "audit", "m1", 0, 30000
	hb.SubscribedTopicNames = []string{"payments"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hresp, err := b.Request(ctx, hb)
	require.NoError(t, err)
	require.Equal(t, int16(0), hresp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	require.ErrorIs(t, nativeJoin("audit"), equeue.ErrGroupNameTaken, "a KIP-848 Kafka group with a member")

	// The classic member leaves: the name is free for a native group,
	// which starts from the Kafka group's offsets.
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group = "billing"
	lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: j.MemberID}}
	lresp, err := b.Request(ctx, lg)
	require.NoError(t, err)
	require.Equal(t, int16(0), lresp.(*kmsg.LeaveGroupResponse).Members[0].ErrorCode)
	var last error
	assert.Eventually(t, func() bool { last = nativeJoin("billing"); return last == nil }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, last)
	offs, err := e.GroupOffsets(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "payments", Queue: 0}: 3}, offs)
}
