package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestConsumerGroup_BlankMemberAndRackIDsAreRefused: a KIP-848 heartbeat
// whose member ID is blank (empty, or only spaces and control characters)
// is refused with INVALID_REQUEST, as Kafka's coordinator refuses it
// (trimming it first): from v1 at every member epoch, at v0 on every
// heartbeat but a join (member epoch 0), where the coordinator makes the
// ID; so is one whose rack ID is present but blank. Before, only an
// empty member ID of a v1 join was refused: one of spaces made a member
// of that ID, and a blank one of another epoch, or of a leave, got
// UNKNOWN_MEMBER_ID or GROUP_ID_NOT_FOUND. Nothing of the group is made.
func TestConsumerGroup_BlankMemberAndRackIDsAreRefused(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	v1 := kclient(t, addr).SeedBrokers()[0]
	v0versions := kversion.Stable()
	v0versions.SetMaxKeyVersion(68, 0) // ConsumerGroupHeartbeat
	v0 := kclient(t, addr, kgo.MaxVersions(v0versions)).SeedBrokers()[0]

	for _, tc := range []struct {
		name     string
		v0       bool
		member   string
		epoch    int32
		instance *string
		rack     *string
	}{
		{"v1 join, member ID of a space", false, " ", 0, nil, nil},
		{"v1 join, member ID of control characters", false, "\t\n", 0, nil, nil},
		{"v1 heartbeat, member ID of a space", false, " ", 1, nil, nil},
		{"v1 leave, empty member ID", false, "", -1, nil, nil},
		{"v1 static leave, empty member ID", false, "", -2, kmsg.StringPtr("i1"), nil},
		{"v0 heartbeat, empty member ID", true, "", 1, nil, nil},
		{"v0 leave, member ID of a space", true, " ", -1, nil, nil},
		{"empty rack ID", false, "m1", 0, nil, kmsg.StringPtr("")},
		{"rack ID of spaces", false, "m1", 0, nil, kmsg.StringPtr("  ")},
	} {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", tc.member, tc.epoch, 30000
		hb.InstanceID, hb.RackID = tc.instance, tc.rack
		hb.SubscribedTopicNames = []string{"t"}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		b := v1
		if tc.v0 {
			b = v0
		}
		resp, err := b.Request(ctx, hb)
		require.NoError(t, err)
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		if tc.v0 {
			require.Equal(t, int16(0), r.GetVersion())
		}
		assert.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode, tc.name)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	resp, err := v1.Request(ctx, dg)
	require.NoError(t, err)
	assert.Equal(t, "Dead", resp.(*kmsg.DescribeGroupsResponse).Groups[0].State, "no group was made")

	// A v0 join without a member ID is given one, and a rack ID that is
	// not blank is taken.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.RebalanceTimeoutMillis, hb.RackID = "g", 30000, kmsg.StringPtr("r1")
	hb.SubscribedTopicNames = []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err = v0.Request(ctx, hb)
	require.NoError(t, err)
	r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	require.Equal(t, int16(0), r.ErrorCode)
	require.NotNil(t, r.MemberID)
	assert.NotEmpty(t, *r.MemberID)
}
