package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroup_BlankInstanceIDIsRefused: a KIP-848 heartbeat whose
// group.instance.id is present but blank (empty, or only spaces and
// control characters) is refused with INVALID_REQUEST, as Kafka's
// coordinator refuses it (it trims the ID before checking it is not
// empty); one of spaces only was taken as an instance of that name.
// Nothing of the group is made.
func TestConsumerGroup_BlankInstanceIDIsRefused(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	b := kclient(t, addr).SeedBrokers()[0]
	for _, in := range []string{"", " ", "\t", " \n "} {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "m1", 0, 30000
		hb.InstanceID = kmsg.StringPtr(in)
		hb.SubscribedTopicNames = []string{"t"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := b.Request(ctx, hb)
		require.NoError(t, err)
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		assert.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode, "instance ID %q", in)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	resp, err := b.Request(ctx, dg)
	require.NoError(t, err)
	assert.Equal(t, "Dead", resp.(*kmsg.DescribeGroupsResponse).Groups[0].State, "no group was made")
}

// TestGroups_EmptyInstanceIDIsAnInstanceAsInKafka: Kafka's coordinator
// does not check a classic JoinGroup's group.instance.id (its clients
// refuse a blank one before sending it), so an empty one, present, names
// an instance, and the listener does the same: a second join of that
// instance without a member ID takes the first member's place, which is
// fenced.
func TestGroups_EmptyInstanceIDIsAnInstanceAsInKafka(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	b := kclient(t, addr).SeedBrokers()[0]
	join := func() *kmsg.JoinGroupResponse {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "g", 30000, 1000, "consumer"
		jg.InstanceID = kmsg.StringPtr("")
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		return requestJoin(ctx, t, b, jg)
	}
	first := join()
	require.Equal(t, int16(0), first.ErrorCode)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation, sg.InstanceID = "g", first.MemberID, first.Generation, kmsg.StringPtr("")
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: first.MemberID, MemberAssignment: []byte{}}}
	resp, err := b.Request(ctx, sg)
	require.NoError(t, err)
	require.Equal(t, int16(0), resp.(*kmsg.SyncGroupResponse).ErrorCode)

	second := join()
	require.Equal(t, int16(0), second.ErrorCode)
	assert.NotEqual(t, first.MemberID, second.MemberID)
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", first.MemberID, first.Generation, kmsg.StringPtr("")
	hresp, err := b.Request(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, kerr.FencedInstanceID.Code, hresp.(*kmsg.HeartbeatResponse).ErrorCode, "the member replaced")
}
