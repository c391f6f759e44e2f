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

// TestOffsetFetch_V9: the listener serves OffsetFetch v9 (KIP-848: the
// member ID and member epoch of the member asking) and advertises it. A
// member of a KIP-848 group fetches with its member epoch: a member ID
// the group does not know (an empty group's too) gets UNKNOWN_MEMBER_ID,
// an epoch other than the member's STALE_MEMBER_EPOCH, as the group's
// error and without offsets, as from Kafka (ConsumerGroup
// validateOffsetFetch); a fetch naming no member (an admin client's) gets
// the offsets. A classic group's fetch is not checked, as in Kafka, nor is
// one of a group with no KIP-848 members. Before, the listener served up
// to v8 and closed the connection of a v9 request.
func TestOffsetFetch_V9(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	for _, g := range []string{"cg", "g", "lone"} {
		require.NoError(t, e.CommitGroupOffsets(ctx, g, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}))
	}
	b := kclient(t, addr).SeedBrokers()[0]
	resp, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	require.NoError(t, err)
	var advertised kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 9 {
			advertised = k
		}
	}
	assert.GreaterOrEqual(t, advertised.MaxVersion, int16(9), "OffsetFetch v9 advertised")

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	correlation := int32(0)
	// fetch sends one v9 fetch of partition 0 of t and returns the group's
	// error code and the offset answered (none: -2).
	fetch := func(group string, member *string, epoch int32) (int16, int64) {
		t.Helper()
		of := kmsg.NewPtrOffsetFetchRequest()
		of.SetVersion(9)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, member, epoch
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		of.Groups = append(of.Groups, rg)
		correlation++
		resp, err := requestAt(t, nc, correlation, of)
		require.NoError(t, err, "OffsetFetch v9 answered")
		groups := resp.(*kmsg.OffsetFetchResponse).Groups
		require.Len(t, groups, 1)
		g := groups[0]
		assert.Equal(t, group, g.Group)
		if g.ErrorCode != 0 {
			assert.Empty(t, g.Topics, "no offsets with a group error")
			return g.ErrorCode, -2
		}
		require.Len(t, g.Topics, 1)
		require.Len(t, g.Topics[0].Partitions, 1)
		p := g.Topics[0].Partitions[0]
		assert.Equal(t, int16(0), p.ErrorCode)
		return 0, p.Offset
	}
	tid := topicIDOf(ctx, t, b, "t")

	m := &cgMember{t: t, b: b, group: "cg", id: "m"}
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0}, m.owned)
	code, off := fetch("cg", kmsg.StringPtr(m.id), m.epoch)
	assert.Equal(t, int16(0), code, "the member at its epoch")
	assert.Equal(t, int64(3), off)
	code, _ = fetch("cg", kmsg.StringPtr(m.id), m.epoch-1)
	assert.Equal(t, kerr.StaleMemberEpoch.Code, code, "an older epoch")
	code, _ = fetch("cg", kmsg.StringPtr(m.id), m.epoch+1)
	assert.Equal(t, kerr.StaleMemberEpoch.Code, code, "an epoch the member was never given")
	code, _ = fetch("cg", kmsg.StringPtr("stranger"), m.epoch)
	assert.Equal(t, kerr.UnknownMemberID.Code, code, "a member the group does not know")
	code, off = fetch("cg", nil, -1)
	assert.Equal(t, int16(0), code, "no member: an admin client's fetch")
	assert.Equal(t, int64(3), off)

	// A classic group, and a group that only has offsets: not checked.
	j := joinAlone(ctx, t, b, "g")
	code, off = fetch("g", kmsg.StringPtr(j.MemberID), j.Generation+5)
	assert.Equal(t, int16(0), code, "a classic group's member")
	assert.Equal(t, int64(3), off)
	code, off = fetch("lone", kmsg.StringPtr("anyone"), 7)
	assert.Equal(t, int16(0), code, "a group with offsets only")
	assert.Equal(t, int64(3), off)

	// The KIP-848 group once its member left: kept, empty, and knowing no
	// member.
	m.epoch = -1
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	code, _ = fetch("cg", kmsg.StringPtr(m.id), 1)
	assert.Equal(t, kerr.UnknownMemberID.Code, code, "a member of the empty group")
	code, off = fetch("cg", nil, -1)
	assert.Equal(t, int16(0), code, "the empty group, no member")
	assert.Equal(t, int64(3), off)
}
