package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestGroups_NativeGroupNameIsRefusedWithoutMembers: a native consumer
// group keeps its name, subscriptions and offsets after its consumers
// stopped. A Kafka client using that name as its group (kcat -G billing
// on another topic, or a tool committing without a generation) used to be
// taken then: its offsets landed in the native group, where `equeue
// groups` did not show them (it lists the group's subscriptions), retention
// keeping unconsumed messages did not wait for them, and a commit on a
// topic both read moved the native group's offset. The name stays the
// native group's until it is deleted: joins (classic and KIP-848) and
// commits are refused with GROUP_AUTHORIZATION_FAILED, as while it has
// members, and nothing of the native group changes.
func TestGroups_NativeGroupNameIsRefusedWithoutMembers(t *testing.T) {
	e, addr := setup(t, map[string]int{"payments": 1, "orders": 1})
	ctx := testCtx(t)
	for _, topic := range []string{"payments", "orders"} {
		for range 5 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	payments := equeue.QueueRef{Topic: "payments", Queue: 0}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "payments"}}, From: equeue.ConsumeFromEarliest})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "billing", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 2}}}))
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "billing", Member: "m"}))

	b := kclient(t, addr).SeedBrokers()[0]
	join := func() int16 {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "billing", 30000, 1000, "consumer"
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		return requestJoin(ctx, t, b, jg).ErrorCode
	}
	heartbeat := func() int16 {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "billing", "m1", 0, 30000
		hb.SubscribedTopicNames = []string{"orders"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := b.Request(ctx, hb)
		require.NoError(t, err)
		return resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	commit := func(topic string, offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = "billing", -1
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = topic
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, commit("orders", 4), "another topic")
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, commit("payments", 5), "the native group's topic")
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, join(), "classic")
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, heartbeat(), "KIP-848")

	offs, err := e.GroupOffsets(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{payments: 2}, offs, "the native group's offsets, and only those")
	gi, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, []equeue.Subscription{{Topic: "payments", Filter: "*"}}, gi.Subscriptions)

	// Once the native group is deleted the name is free for Kafka.
	require.NoError(t, e.DeleteGroup(ctx, "billing", equeue.DeleteGroupOptions{}))
	assert.Equal(t, int16(0), commit("orders", 4))
	assert.Equal(t, int16(0), join())
}

// TestGroups_CommitWithAGenerationToANativeGroupIsRefused: a Kafka
// client committing with a generation (as a member of a group it thinks
// it is in) under a native consumer group's name, with members or
// without, is refused with UNKNOWN_MEMBER_ID, as Kafka's coordinator
// refuses a member it does not know, and the native group's offsets do
// not move: the listener has no Kafka group of that name, since its joins
// are refused (TestGroups_NativeGroupNameIsRefusedWithoutMembers) and a
// Kafka group with members keeps native joins out
// (TestGroups_NativeJoinIsRefusedWhileKafkaGroupHasMembers).
func TestGroups_CommitWithAGenerationToANativeGroupIsRefused(t *testing.T) {
	e, addr := setup(t, map[string]int{"payments": 1})
	ctx := testCtx(t)
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "payments", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	payments := equeue.QueueRef{Topic: "payments", Queue: 0}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "payments"}}, From: equeue.ConsumeFromEarliest})
	require.NoError(t, err)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "billing", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 2}}}))

	b := kclient(t, addr).SeedBrokers()[0]
	commit := func(member string, generation int32) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.MemberID, oc.Generation = "billing", member, generation
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "payments"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 4, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("m", 1), "the native member's ID, with members")
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("kafka-1", 0), "generation 0")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "billing", Member: "m"}))
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("kafka-1", 3), "without members")

	offs, err := e.GroupOffsets(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{payments: 2}, offs, "the native group's offsets did not move")
}
