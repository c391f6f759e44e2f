package kafka_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// staticBeat sends a ConsumerGroupHeartbeat for group "g" on b with a
// group.instance.id: a join (epoch 0, subscribing to t), a keepalive, a
// full heartbeat (owned non-nil) or a leave (epoch -1 or -2). instance ""
// sends none.
func staticBeat(ctx context.Context, t *testing.T, b *kgo.Broker, id, instance string, epoch int32, tid [16]byte, owned []int32) *kmsg.ConsumerGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", id, epoch, -1
	if instance != "" {
		req.InstanceID = kmsg.StringPtr(instance)
	}
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid, Partitions: owned}}
	}
	resp, err := b.Request(ctx, req)
	require.NoError(t, err)
	return resp.(*kmsg.ConsumerGroupHeartbeatResponse)
}

// assigned lists the partitions of an answer's assignment (nil: none sent).
func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, at := range r.Assignment.Topics {
		out = append(out, at.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestConsumerGroup_StaticMemberLeavesForAWhile: a KIP-848 member with a
// group.instance.id that leaves with member epoch -2 (a static member's
// temporary leave, KIP-848) keeps its partitions, which no other member
// gets meanwhile; a member that joins with the same instance ID takes
// them over at once, with the member epoch they were held at; the
// replaced member ID is fenced (FENCED_INSTANCE_ID), a second join with
// an instance ID in use gets UNRELEASED_INSTANCE_ID, and a leave with -2
// that names no instance ID INVALID_REQUEST, as from Kafka. Before, -2
// was taken as a full leave (-1): the partitions went to the other member
// at once and the returning instance joined as a new member, so the
// group was rebalanced twice.
func TestConsumerGroup_StaticMemberLeavesForAWhile(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	// s (instance i1) holds partition 1, d partition 0.
	r := staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, []int32{0, 1}, assigned(r))
	sEpoch := r.MemberEpoch
	d := &cgMember{t: t, b: b, id: "member-d"}
	require.Equal(t, int16(0), d.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	r = staticBeat(ctx, t, b, "s-1", "i1", sEpoch, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, []int32{1}, assigned(r))
	r = staticBeat(ctx, t, b, "s-1", "i1", sEpoch, tid, []int32{1})
	require.Equal(t, int16(0), r.ErrorCode)
	sEpoch = r.MemberEpoch
	require.Equal(t, int16(0), d.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, []int32{0}, d.owned)

	r = staticBeat(ctx, t, b, "s-1", "", -2, tid, nil)
	assert.Equal(t, int16(42), r.ErrorCode, "INVALID_REQUEST: a static leave names its instance")
	r = staticBeat(ctx, t, b, "s-1", "i1", -2, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, int32(-2), r.MemberEpoch)

	require.Equal(t, int16(0), d.beat(ctx, tid, nil, true).ErrorCode)
	assert.Equal(t, []int32{0}, d.owned, "s's partition is kept for it")

	// The instance comes back, under a new member ID.
	r = staticBeat(ctx, t, b, "s-2", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, sEpoch, r.MemberEpoch, "it goes on at the epoch of the member it replaces")
	assert.Equal(t, []int32{1}, assigned(r), "with that member's partitions")
	require.Equal(t, int16(0), d.beat(ctx, tid, nil, true).ErrorCode)
	assert.Equal(t, []int32{0}, d.owned)

	assert.Equal(t, int16(82), staticBeat(ctx, t, b, "s-1", "i1", sEpoch, tid, nil).ErrorCode, "FENCED_INSTANCE_ID: replaced")
	assert.Equal(t, int16(111), staticBeat(ctx, t, b, "s-3", "i1", 0, tid, nil).ErrorCode, "UNRELEASED_INSTANCE_ID: i1 is in use")
	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-2", "i1", sEpoch, tid, []int32{1}).ErrorCode, "s-2 is a member")

	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g"}
	resp, err := b.Request(ctx, req)
	require.NoError(t, err)
	members := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].Members
	require.Len(t, members, 2)
	for _, m := range members {
		if m.MemberID == "s-2" {
			assert.Equal(t, kmsg.StringPtr("i1"), m.InstanceID)
		} else {
			assert.Equal(t, d.id, m.MemberID)
			assert.Nil(t, m.InstanceID)
		}
	}
}

// TestConsumerGroup_StaticMemberAwayPastItsSession: the partitions of a
// static member that left with member epoch -2 go to the other members
// once its session ran out without its instance coming back.
func TestConsumerGroup_StaticMemberAwayPastItsSession(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: 2 * time.Second})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	r := staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	d := &cgMember{t: t, b: b, id: "member-d"}
	require.Equal(t, int16(0), d.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	r = staticBeat(ctx, t, b, "s-1", "i1", r.MemberEpoch, tid, []int32{1})
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", -2, tid, nil).ErrorCode)

	require.Eventually(t, func() bool {
		require.Equal(t, int16(0), d.beat(ctx, tid, nil, true).ErrorCode)
		return len(d.owned) == 2
	}, 30*time.Second, 50*time.Millisecond, "s is dropped after its session; d gets both")
	assert.Equal(t, int16(0), staticBeat(ctx, t, b, "s-2", "i1", 0, tid, nil).ErrorCode, "the instance joins as a new member")
}

// TestConsumerGroup_StaticMemberAwayCommitsNothing: a static member that
// left with member epoch -2 keeps its partitions for its instance, but
// its own commits are refused with STALE_MEMBER_EPOCH, as Kafka refuses a
// commit whose epoch is not the member's (-2 while it is away); the
// member that takes its place commits them, and the replaced member ID is
// UNKNOWN_MEMBER_ID. Before, the away member still committed the
// partitions it kept, with its last epoch or none.
func TestConsumerGroup_StaticMemberAwayCommitsNothing(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	r := staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, []int32{0}, assigned(r))
	epoch := r.MemberEpoch
	require.Equal(t, int16(0), commitOne(ctx, t, b, epoch, "s-1", 1))

	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", -2, tid, nil).ErrorCode)
	assert.Equal(t, int16(113), commitOne(ctx, t, b, epoch, "s-1", 2), "STALE_MEMBER_EPOCH: away, with its last epoch")
	assert.Equal(t, int16(113), commitOne(ctx, t, b, -1, "s-1", 2), "STALE_MEMBER_EPOCH: away, without an epoch")

	r = staticBeat(ctx, t, b, "s-2", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, []int32{0}, assigned(r))
	assert.Equal(t, int16(0), commitOne(ctx, t, b, r.MemberEpoch, "s-2", 3), "the member in its place commits")
	assert.Equal(t, int16(25), commitOne(ctx, t, b, epoch, "s-1", 4), "UNKNOWN_MEMBER_ID: replaced")

	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
}

// TestConsumerGroup_ReplacedStaticMemberLeaveIsFenced: a leave (member
// epoch -1 or -2) that names an instance ID is checked against the
// instance's member, as Kafka checks it: the member another took the
// place of gets FENCED_INSTANCE_ID, and an instance the group does not
// have UNKNOWN_MEMBER_ID; the member in its place leaves. Before, a -1
// leave looked the member ID up only and answered the replaced member
// UNKNOWN_MEMBER_ID.
func TestConsumerGroup_ReplacedStaticMemberLeaveIsFenced(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil).ErrorCode)
	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", -2, tid, nil).ErrorCode)
	r := staticBeat(ctx, t, b, "s-2", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)

	assert.Equal(t, int16(82), staticBeat(ctx, t, b, "s-1", "i1", -1, tid, nil).ErrorCode, "FENCED_INSTANCE_ID: -1 of the member replaced")
	assert.Equal(t, int16(82), staticBeat(ctx, t, b, "s-1", "i1", -2, tid, nil).ErrorCode, "FENCED_INSTANCE_ID: -2 of the member replaced")
	assert.Equal(t, int16(25), staticBeat(ctx, t, b, "s-1", "", -1, tid, nil).ErrorCode, "UNKNOWN_MEMBER_ID: no instance named, the member ID is gone")
	assert.Equal(t, int16(25), staticBeat(ctx, t, b, "s-2", "i9", -1, tid, nil).ErrorCode, "UNKNOWN_MEMBER_ID: no member of that instance")
	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-2", "i1", r.MemberEpoch, tid, nil).ErrorCode, "s-2 is still a member")

	r = staticBeat(ctx, t, b, "s-2", "i1", -1, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, int32(-1), r.MemberEpoch)
	assert.Equal(t, int16(25), staticBeat(ctx, t, b, "s-2", "i1", -1, tid, nil).ErrorCode, "UNKNOWN_MEMBER_ID: it left")
}

// TestConsumerGroup_HeartbeatNamingAnUnknownInstanceIsRefused: a heartbeat
// (member epoch above 0) that names an instance ID the group has no member
// of is answered UNKNOWN_MEMBER_ID, as Kafka's throwIfStaticMemberIsUnknown
// answers it, whether the member joined with another instance ID or with
// none; one naming another member's instance gets FENCED_INSTANCE_ID.
// Before, a member known by its ID was served whatever instance it named.
func TestConsumerGroup_HeartbeatNamingAnUnknownInstanceIsRefused(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	r := staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	sEpoch := r.MemberEpoch
	d := &cgMember{t: t, b: b, id: "member-d"}
	require.Equal(t, int16(0), d.beat(ctx, tid, []string{"t"}, false).ErrorCode)

	assert.Equal(t, int16(25), staticBeat(ctx, t, b, "s-1", "i2", sEpoch, tid, nil).ErrorCode, "UNKNOWN_MEMBER_ID: s-1 joined as i1, no member is i2")
	assert.Equal(t, int16(25), staticBeat(ctx, t, b, d.id, "i9", d.epoch, tid, nil).ErrorCode, "UNKNOWN_MEMBER_ID: d joined without an instance, no member is i9")
	assert.Equal(t, int16(82), staticBeat(ctx, t, b, d.id, "i1", d.epoch, tid, nil).ErrorCode, "FENCED_INSTANCE_ID: i1 is s-1's")

	require.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", sEpoch, tid, nil).ErrorCode, "s-1 is still a member, as i1")
	require.Equal(t, int16(0), d.beat(ctx, tid, nil, false).ErrorCode, "d is still a member")
}

// TestConsumerGroup_StaticMemberJoinsAgainUnderItsOwnID: a static member
// that joins again (member epoch 0) under the member ID that holds its
// instance, as franz-go and the Java consumer do after a lost answer or
// FENCED_MEMBER_EPOCH, is served as that member joining anew, not
// refused with UNRELEASED_INSTANCE_ID as Kafka's coordinator refuses it
// (fatal to those clients; apache/kafka#23542). Another member ID naming
// the instance still gets UNRELEASED_INSTANCE_ID.
func TestConsumerGroup_StaticMemberJoinsAgainUnderItsOwnID(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	r := staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode)
	require.Equal(t, []int32{0, 1}, assigned(r))

	r = staticBeat(ctx, t, b, "s-1", "i1", 0, tid, nil)
	require.Equal(t, int16(0), r.ErrorCode, "s-1 joins again")
	assert.Equal(t, []int32{0, 1}, assigned(r))
	assert.Equal(t, int16(111), staticBeat(ctx, t, b, "s-2", "i1", 0, tid, nil).ErrorCode, "UNRELEASED_INSTANCE_ID: i1 is s-1's")
	assert.Equal(t, int16(0), staticBeat(ctx, t, b, "s-1", "i1", r.MemberEpoch, tid, []int32{0, 1}).ErrorCode, "s-1 is a member, as i1")
}
