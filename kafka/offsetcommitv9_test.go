package kafka_test

import (
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// requestAt sends req on nc at the version it is set to (flexible ones
// too, which rawRequest does not frame) and decodes its answer.
func requestAt(t *testing.T, nc net.Conn, correlation int32, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, correlation)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		return nil, err
	}
	require.Equal(t, uint32(correlation), binary.BigEndian.Uint32(b), "correlation ID")
	b = b[4:]
	if req.IsFlexible() {
		require.Equal(t, byte(0), b[0], "no response header tags")
		b = b[1:]
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	require.NoError(t, resp.ReadFrom(b))
	return resp, nil
}

// TestOffsetCommit_V9: the listener serves OffsetCommit v9 (KIP-848, the
// member epoch in place of the generation) and advertises it. A member of
// a KIP-848 group commits at v9 with its member epoch: a member ID the
// group does not know gets UNKNOWN_MEMBER_ID, a partition it does not
// hold STALE_MEMBER_EPOCH, an epoch it was never given
// FENCED_MEMBER_EPOCH; a classic group's commit at v9 is checked as at v8
// (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION). Before, the listener served up
// to v8 and closed the connection of a v9 request, as for any version it
// does not serve.
func TestOffsetCommit_V9(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1, "u": 1})
	ctx := testCtx(t)
	for _, topic := range []string{"t", "u"} {
		for range 5 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
		}
	}
	b := kclient(t, addr).SeedBrokers()[0]
	resp, err := b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	require.NoError(t, err)
	var advertised kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 8 {
			advertised = k
		}
	}
	assert.GreaterOrEqual(t, advertised.MaxVersion, int16(9), "OffsetCommit v9 advertised")

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	correlation := int32(0)
	commit := func(group, member string, generation int32, topic string, offset int64) int16 {
		t.Helper()
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.SetVersion(9)
		oc.Group, oc.Generation, oc.MemberID = group, generation, member
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = topic
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		correlation++
		resp, err := requestAt(t, nc, correlation, oc)
		require.NoError(t, err, "OffsetCommit v9 answered")
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}

	// A KIP-848 group: its one member holds t's partition.
	tid := topicIDOf(ctx, t, b, "t")
	m := &cgMember{t: t, b: b, group: "cg", id: "m"}
	require.Equal(t, int16(0), m.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0}, m.owned)
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("cg", "stranger", m.epoch, "t", 1), "a member the group does not know")
	assert.Equal(t, kerr.StaleMemberEpoch.Code, commit("cg", m.id, m.epoch, "u", 1), "a partition the member does not hold")
	assert.Equal(t, kerr.FencedMemberEpoch.Code, commit("cg", m.id, m.epoch+1, "t", 1), "an epoch the member was never given")
	assert.Equal(t, int16(0), commit("cg", m.id, m.epoch, "t", 2), "the member's own partition at its epoch")

	// A classic group: v9 checks the generation as v8 does.
	j := joinAlone(ctx, t, b, "g")
	assert.Equal(t, kerr.UnknownMemberID.Code, commit("g", "stranger", j.Generation, "t", 3), "unknown member")
	assert.Equal(t, kerr.IllegalGeneration.Code, commit("g", j.MemberID, j.Generation-1, "t", 3), "stale generation")
	assert.Equal(t, int16(0), commit("g", j.MemberID, j.Generation, "t", 3), "the member of the generation")

	for group, want := range map[string]int64{"cg": 2, "g": 3} {
		offs, err := e.GroupOffsets(ctx, group)
		require.NoError(t, err)
		assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: want}, offs, group)
	}
}
