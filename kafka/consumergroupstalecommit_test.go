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

// TestConsumerGroup_StaleEpochCommitOfAPartitionThatCameBack: a KIP-848
// member's commit carrying an epoch older than the one it was given a
// partition at is refused (STALE_MEMBER_EPOCH), even when the member
// holds the partition again: between that epoch and now the partition
// was another member's, which committed its own progress, and the late
// commit (a retry, one delayed in flight) would move the group's offset
// back over records that member processed. A partition held all along
// takes a commit of an older epoch, as before.
func TestConsumerGroup_StaleEpochCommitOfAPartitionThatCameBack(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	for q := range 2 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}})
		require.NoError(t, err)
	}
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: time.Minute})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	commit := func(m *cgMember, epoch, part int32, offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "g", epoch, m.id
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "t"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: part, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}

	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0, 1}, a.owned)
	old := a.epoch

	// b joins: a gives partition 1 up, b gets it and commits its progress.
	bm := &cgMember{t: t, b: b, id: "member-b"}
	require.Equal(t, int16(0), bm.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, []int32{0}, a.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode) // reports the release
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, []int32{1}, bm.owned)
	require.Equal(t, int16(0), commit(bm, bm.epoch, 1, 3))

	// b leaves: partition 1 comes back to a, at a later epoch.
	bm.epoch = -1
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, []int32{0, 1}, a.owned)

	assert.Equal(t, int16(113), commit(a, old, 1, 1), "STALE_MEMBER_EPOCH: a had partition 1 at that epoch, b had it since")
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[equeue.QueueRef{Topic: "t", Queue: 1}], "b's commit stands")
	assert.Equal(t, int16(0), commit(a, old, 0, 2), "partition 0 was a's all along")
	assert.Equal(t, int16(0), commit(a, a.epoch, 1, 3), "with the epoch it has partition 1 at")
}
