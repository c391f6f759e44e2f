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

// TestOffsetFetch_V10: the listener serves OffsetFetch v10 (Kafka 4.2,
// KIP-848), which names each topic by its ID (the one Metadata gives), and
// advertises it. The answer names each topic by the ID it was asked with;
// an ID no topic has (one that never was, or the ID of a topic deleted
// and created again since) gets UNKNOWN_TOPIC_ID and offset -1 on every
// partition of it, as from Kafka, the request's other topics being
// answered. A fetch of all the group's offsets names their topics by ID.
// The member is checked as at v9. Before, the listener served up to v8
// and closed the connection of a v10 request.
func TestOffsetFetch_V10(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1, "u": 2})
	ctx := testCtx(t)
	for _, q := range []equeue.QueueRef{{Topic: "t", Queue: 0}, {Topic: "u", Queue: 0}, {Topic: "u", Queue: 1}} {
		for range 5 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: q.Topic, Queue: q.Queue, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	require.NoError(t, e.CommitGroupOffsets(ctx, "lone", map[equeue.QueueRef]int64{
		{Topic: "t", Queue: 0}: 2, {Topic: "u", Queue: 0}: 3, {Topic: "u", Queue: 1}: 4}))
	b := kclient(t, addr).SeedBrokers()[0]
	resp, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	require.NoError(t, err)
	var advertised kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 9 {
			advertised = k
		}
	}
	assert.Equal(t, int16(10), advertised.MaxVersion, "OffsetFetch v10 advertised")

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	correlation := int32(0)
	type answer struct {
		offsets []int64
		codes   []int16
	}
	// fetch sends one v10 fetch of the given partitions of each topic ID
	// (all of the group's offsets if ids is nil) and returns the group's
	// error code and the answer by topic ID, checking that the topics
	// asked for are answered in the order asked.
	fetch := func(group string, member *string, epoch int32, ids [][16]byte, partitions ...[]int32) (int16, map[[16]byte]answer) {
		t.Helper()
		of := kmsg.NewPtrOffsetFetchRequest()
		of.SetVersion(10)
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = group, member, epoch
		for i, id := range ids {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.TopicID, rt.Partitions = id, partitions[i]
			rg.Topics = append(rg.Topics, rt)
		}
		of.Groups = append(of.Groups, rg)
		correlation++
		resp, err := requestAt(t, nc, correlation, of)
		require.NoError(t, err, "OffsetFetch v10 answered")
		groups := resp.(*kmsg.OffsetFetchResponse).Groups
		require.Len(t, groups, 1)
		g := groups[0]
		if g.ErrorCode != 0 {
			assert.Empty(t, g.Topics, "no offsets with a group error")
			return g.ErrorCode, nil
		}
		if ids != nil {
			require.Len(t, g.Topics, len(ids))
		}
		out := map[[16]byte]answer{}
		for i, rt := range g.Topics {
			if ids != nil {
				assert.Equal(t, ids[i], rt.TopicID, "the answer names the topic by the ID asked with")
			}
			var a answer
			for _, p := range rt.Partitions {
				a.offsets = append(a.offsets, p.Offset)
				a.codes = append(a.codes, p.ErrorCode)
			}
			out[rt.TopicID] = a
		}
		return 0, out
	}
	tid, uid := topicIDOf(ctx, t, b, "t"), topicIDOf(ctx, t, b, "u")
	unknown := [16]byte{1, 2, 3}

	code, got := fetch("lone", nil, -1, [][16]byte{tid, unknown, uid}, []int32{0}, []int32{0, 1}, []int32{0, 1})
	assert.Equal(t, int16(0), code)
	assert.Equal(t, map[[16]byte]answer{
		tid:     {offsets: []int64{2}, codes: []int16{0}},
		unknown: {offsets: []int64{-1, -1}, codes: []int16{kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Code}},
		uid:     {offsets: []int64{3, 4}, codes: []int16{0, 0}},
	}, got)

	code, got = fetch("lone", nil, -1, nil)
	assert.Equal(t, int16(0), code, "all the group's offsets")
	assert.Equal(t, map[[16]byte]answer{
		tid: {offsets: []int64{2}, codes: []int16{0}},
		uid: {offsets: []int64{3, 4}, codes: []int16{0, 0}},
	}, got, "named by topic ID")

	// A topic deleted and created again has a new ID: the old one is
	// no topic's any more.
	require.NoError(t, e.DeleteTopic(ctx, "u"))
	require.NoError(t, e.CreateTopic(ctx, "u", 2))
	newUID := topicIDOf(ctx, t, b, "u")
	require.NotEqual(t, uid, newUID)
	code, got = fetch("lone", nil, -1, [][16]byte{uid}, []int32{0})
	assert.Equal(t, int16(0), code)
	assert.Equal(t, map[[16]byte]answer{uid: {offsets: []int64{-1}, codes: []int16{kerr.UnknownTopicID.Code}}}, got, "the ID of the topic deleted")

	// A KIP-848 member: checked as at v9.
	m := &cgMember{t: t, b: b, group: "cg", id: "m"}
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.NoError(t, e.CommitGroupOffsets(ctx, "cg", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 1}))
	code, got = fetch("cg", kmsg.StringPtr(m.id), m.epoch, [][16]byte{tid}, []int32{0})
	assert.Equal(t, int16(0), code, "the member at its epoch")
	assert.Equal(t, map[[16]byte]answer{tid: {offsets: []int64{1}, codes: []int16{0}}}, got)
	code, _ = fetch("cg", kmsg.StringPtr(m.id), m.epoch-1, [][16]byte{tid}, []int32{0})
	assert.Equal(t, kerr.StaleMemberEpoch.Code, code, "a stale epoch")
	code, _ = fetch("cg", kmsg.StringPtr("stranger"), m.epoch, [][16]byte{tid}, []int32{0})
	assert.Equal(t, kerr.UnknownMemberID.Code, code, "a member the group does not know")
}
