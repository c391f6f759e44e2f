package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestGroups_JoinWithoutMemberIDIsMemberIDRequired: a JoinGroup v4+
// without a member ID is answered MEMBER_ID_REQUIRED with an ID and makes
// no member (KIP-394): only a join carrying that ID does. Before, the first
// join made a member at once, and a client whose join timed out on its side
// joined again without an ID, leaving a phantom member that held
// partitions until its session expired. An ID given out and never used
// expires after the session timeout; an ID never given out is
// UNKNOWN_MEMBER_ID; a v3 join without an ID still joins at once.
func TestGroups_JoinWithoutMemberIDIsMemberIDRequired(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s, addr := serveServer(t, e)
	b := kclient(t, addr).SeedBrokers()[0]
	join := func(b *kgo.Broker, group, id string, session int32) *kmsg.JoinGroupResponse {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.MemberID, jg.ProtocolType = group, id, "consumer"
		jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = session, 30000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp, err := b.Request(ctx, jg)
		require.NoError(t, err)
		return resp.(*kmsg.JoinGroupResponse)
	}
	members := func(group string) []kmsg.DescribeGroupsResponseGroupMember {
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{group}
		resp, err := b.Request(ctx, dg)
		require.NoError(t, err)
		return resp.(*kmsg.DescribeGroupsResponse).Groups[0].Members
	}

	first := join(b, "g", "", 30000)
	require.GreaterOrEqual(t, first.GetVersion(), int16(4))
	require.Equal(t, int16(79), first.ErrorCode, "MEMBER_ID_REQUIRED")
	require.NotEmpty(t, first.MemberID)
	assert.Empty(t, members("g"), "no member yet")
	assert.Equal(t, 1, kafka.PendingMembers(s, "g"))

	assert.Equal(t, int16(25), join(b, "g", "made-up", 30000).ErrorCode, "UNKNOWN_MEMBER_ID: an ID never given out")
	second := join(b, "g", first.MemberID, 30000)
	require.Equal(t, int16(0), second.ErrorCode)
	assert.Equal(t, first.MemberID, second.MemberID)
	m := members("g")
	require.Len(t, m, 1)
	assert.Equal(t, first.MemberID, m[0].MemberID)
	assert.Zero(t, kafka.PendingMembers(s, "g"))

	// An ID given out and never used expires after the session timeout.
	unused := join(b, "h", "", 1000)
	require.Equal(t, int16(79), unused.ErrorCode)
	require.Eventually(t, func() bool { return kafka.PendingMembers(s, "h") == 0 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, int16(25), join(b, "h", unused.MemberID, 1000).ErrorCode, "expired")

	// Before v4 the first join makes the member.
	v3 := kversion.Stable()
	v3.SetMaxKeyVersion(11, 3) // JoinGroup
	old := join(kclient(t, addr, kgo.MaxVersions(v3)).SeedBrokers()[0], "v3", "", 30000)
	require.Equal(t, int16(3), old.GetVersion())
	require.Equal(t, int16(0), old.ErrorCode)
	assert.NotEmpty(t, old.MemberID)
	assert.Len(t, members("v3"), 1)
}

// TestKgo_JoinsThroughMemberIDRequired: franz-go, which follows KIP-394,
// joins a group through MEMBER_ID_REQUIRED and consumes, and the group
// has only the one member.
func TestKgo_JoinsThroughMemberIDRequired(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	cl := kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := pollN(ctx, t, cl, 1)
	assert.Equal(t, "x", string(recs[0].Value))
	gs, err := kadmin(t, addr).DescribeGroups(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, "Stable", gs["g"].State)
	assert.Len(t, gs["g"].Members, 1)
}
