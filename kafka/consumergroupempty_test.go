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

// TestConsumerGroup_EmptyGroupIsKeptAWhile: a KIP-848 group whose last
// member left is kept, as Kafka keeps it: ConsumerGroupDescribe shows it
// Empty, ListGroups lists it as an Empty consumer group, and a repeated
// leave is UNKNOWN_MEMBER_ID. Before, ConsumerGroupDescribe answered
// GROUP_ID_NOT_FOUND at once, and the coordinator's next tick forgot the
// group, so the repeated leave got GROUP_ID_NOT_FOUND too. Like an empty
// classic group, it is forgotten after a while (its offsets stay in the
// engine), and a classic join makes its name a classic group's, as
// Kafka's coordinator converts an empty consumer group.
func TestConsumerGroup_EmptyGroupIsKeptAWhile(t *testing.T) {
	kafka.SetEmptyGroupKeep(t, time.Minute)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	s, addr := serveServer(t, e)
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	describe := func(group string) kmsg.ConsumerGroupDescribeResponseGroup {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		groups := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups
		require.Len(t, groups, 1)
		return groups[0]
	}
	listed := func(group string) (state, groupType string) {
		t.Helper()
		req := kmsg.NewPtrListGroupsRequest()
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
			if g.Group == group {
				return g.GroupState, g.GroupType
			}
		}
		return "", ""
	}

	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, int16(0), commitOne(ctx, t, b, a.epoch, a.id, 1))
	live := describe("g")
	require.Equal(t, int16(0), live.ErrorCode)
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: a.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)

	d := describe("g")
	assert.Equal(t, int16(0), d.ErrorCode, "a KIP-848 group without members is described")
	assert.Equal(t, "Empty", d.State)
	assert.Empty(t, d.Members)
	assert.Greater(t, d.Epoch, live.Epoch, "the leave raised the group epoch")

	kafka.Tick(s, time.Now()) // the coordinator's round after the leave
	r := (&cgMember{t: t, b: b, id: a.id, epoch: -1}).beat(ctx, tid, nil, false)
	assert.Equal(t, int16(25), r.ErrorCode, "the group is kept: its member left already")
	assert.Equal(t, "Empty", describe("g").State)
	state, groupType := listed("g")
	assert.Equal(t, "Empty", state)
	assert.Equal(t, "consumer", groupType)

	// A member joins the kept group again: its epochs go on.
	again := &cgMember{t: t, b: b, id: "member-a2"}
	require.Equal(t, int16(0), again.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	assert.Greater(t, again.epoch, d.Epoch, "the group epoch carries on")
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: again.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)

	// Forgotten after emptyGroupKeep without members; its offsets stay
	// and list it, as a group that has only offsets.
	kafka.Tick(s, time.Now())
	kafka.Tick(s, time.Now().Add(2*time.Minute))
	gone := describe("g")
	assert.Equal(t, int16(69), gone.ErrorCode, "forgotten")
	r = (&cgMember{t: t, b: b, id: again.id, epoch: -1}).beat(ctx, tid, nil, false)
	assert.Equal(t, int16(69), r.ErrorCode)
	state, groupType = listed("g")
	assert.Equal(t, "Empty", state, "listed for its offsets")
	assert.Equal(t, "classic", groupType)
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}])

	// An empty KIP-848 group that a classic member joins becomes a
	// classic group.
	h := &cgMember{t: t, b: b, group: "h", id: "member-h"}
	require.Equal(t, int16(0), h.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, group: "h", id: h.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, "Empty", describe("h").State)
	joinAlone(ctx, t, b, "h")
	assert.Equal(t, int16(69), describe("h").ErrorCode, "h is a classic group now")
	state, groupType = listed("h")
	assert.Equal(t, "Stable", state)
	assert.Equal(t, "classic", groupType)
}

// TestConsumerGroup_HeartbeatOfAnUnknownMemberMakesNoGroup: a heartbeat
// with a member epoch above 0 to a name without a KIP-848 group (a member
// the coordinator forgot, a mistyped group) is answered UNKNOWN_MEMBER_ID,
// and leaves no group behind, as Kafka creates a consumer group only for
// a joining member (epoch 0). Before, the heartbeat made an empty group,
// which, kept a while as a group whose last member left is, was listed
// as an Empty consumer group and described by ConsumerGroupDescribe, and
// a leave to it got UNKNOWN_MEMBER_ID instead of GROUP_ID_NOT_FOUND.
func TestConsumerGroup_HeartbeatOfAnUnknownMemberMakesNoGroup(t *testing.T) {
	kafka.SetEmptyGroupKeep(t, time.Minute)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	s, addr := serveServer(t, e)
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	ghost := &cgMember{t: t, b: b, group: "phantom", id: "ghost", epoch: 5}
	assert.Equal(t, int16(25), ghost.beat(ctx, tid, []string{"t"}, true).ErrorCode, "UNKNOWN_MEMBER_ID")
	kafka.Tick(s, time.Now()) // the coordinator's round after it

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"phantom"}
	resp, err := b.Request(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, int16(69), resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode, "no group was made")
	lresp, err := b.Request(ctx, kmsg.NewPtrListGroupsRequest())
	require.NoError(t, err)
	for _, g := range lresp.(*kmsg.ListGroupsResponse).Groups {
		assert.NotEqual(t, "phantom", g.Group, "listed")
	}
	leave := &cgMember{t: t, b: b, group: "phantom", id: "ghost", epoch: -1}
	assert.Equal(t, int16(69), leave.beat(ctx, tid, nil, false).ErrorCode, "a leave finds no group")
}
