package kafka_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// classicJoinReq is a JoinGroup for classic group "g" with one "range"
// protocol of metadata meta, under member ID id and instance ID instance
// ("": none).
func classicJoinReq(id, instance, meta string, session, rebalance int32) *kmsg.JoinGroupRequest {
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.MemberID, jg.ProtocolType = "g", id, "consumer"
	jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = session, rebalance
	if instance != "" {
		jg.InstanceID = kmsg.StringPtr(instance)
	}
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(meta)}}
	return jg
}

// joinAsync sends a join in the background, on a connection of its own
// (a client sends joins and syncs one at a time on one); its answer (nil
// if the request failed) arrives on the channel.
func joinAsync(ctx context.Context, t *testing.T, addr string, jg *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	t.Helper()
	b := kclient(t, addr).SeedBrokers()[0]
	out := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		resp, err := b.Request(ctx, jg)
		if err != nil {
			out <- nil
			return
		}
		out <- resp.(*kmsg.JoinGroupResponse)
	}()
	return out
}

// classicSync sends a SyncGroup to group "g"; assign (leader only) maps
// member IDs to assignments.
func classicSync(ctx context.Context, t *testing.T, b *kgo.Broker, id, instance string, gen int32, assign map[string]string) *kmsg.SyncGroupResponse {
	t.Helper()
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.MemberID, sg.Generation = "g", id, gen
	if instance != "" {
		sg.InstanceID = kmsg.StringPtr(instance)
	}
	for mid, a := range assign {
		sg.GroupAssignment = append(sg.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: mid, MemberAssignment: []byte(a)})
	}
	resp, err := b.Request(ctx, sg)
	require.NoError(t, err)
	return resp.(*kmsg.SyncGroupResponse)
}

// classicBeat sends a Heartbeat to group "g" and returns its error code.
func classicBeat(ctx context.Context, t *testing.T, b *kgo.Broker, id, instance string, gen int32) int16 {
	t.Helper()
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", id, gen
	if instance != "" {
		hb.InstanceID = kmsg.StringPtr(instance)
	}
	resp, err := b.Request(ctx, hb)
	require.NoError(t, err)
	return resp.(*kmsg.HeartbeatResponse).ErrorCode
}

// classicCommit commits offset 0 of t/0 to group "g" and returns the
// partition's error code.
func classicCommit(ctx context.Context, t *testing.T, b *kgo.Broker, id, instance string, gen int32) int16 {
	t.Helper()
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "g", gen, id
	if instance != "" {
		oc.InstanceID = kmsg.StringPtr(instance)
	}
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	resp, err := b.Request(ctx, namedCommit{oc})
	require.NoError(t, err)
	return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// describeMembers lists group "g"'s members as DescribeGroups gives them.
func describeMembers(ctx context.Context, t *testing.T, b *kgo.Broker) []kmsg.DescribeGroupsResponseGroupMember {
	t.Helper()
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	resp, err := b.Request(ctx, dg)
	require.NoError(t, err)
	return resp.(*kmsg.DescribeGroupsResponse).Groups[0].Members
}

// staticPair makes classic group "g" of two static members: a (instance
// i1, the leader, assigned "A") and b (i2, assigned "B"), both of the
// generation returned.
func staticPair(ctx context.Context, t *testing.T, addr string) (br *kgo.Broker, a, b string, gen int32) {
	t.Helper()
	return classicPair(ctx, t, addr, "i1", "i2", 10000)
}

// TestGroups_StaticMemberRejoinsWithoutRebalance: a classic member that
// joins with a group.instance.id (KIP-345) and restarts, joining again
// without a member ID, takes the place of its instance's member under a
// new member ID, with no rebalance: it gets the group's generation and
// the assignment its instance had, as from Kafka. The member ID replaced
// is fenced: its join, heartbeat, sync and commit naming the instance get
// FENCED_INSTANCE_ID (without the instance, UNKNOWN_MEMBER_ID). A
// restarted leader is told so with the members and SkipAssignment
// (KIP-814, JoinGroup v9); before v9 it is given the former leader ID and
// no members, as Kafka does. Static members' IDs start with their
// instance ID, which franz-go relies on before v9. Before, the instance ID
// was ignored: the restart joined as a new member and began a rebalance
// that waited for the member it replaced until the rebalance timeout.
func TestGroups_StaticMemberRejoinsWithoutRebalance(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br, a, b, gen := staticPair(ctx, t, addr)
	assert.True(t, strings.HasPrefix(a, "i1-"), "a static member's ID starts with its instance ID: %s", a)
	assert.True(t, strings.HasPrefix(b, "i2-"), "%s", b)

	// b restarts.
	nb := requestJoin(ctx, t, br, classicJoinReq("", "i2", "b", 30000, 10000))
	require.Equal(t, int16(0), nb.ErrorCode)
	assert.Equal(t, gen, nb.Generation, "no rebalance")
	assert.NotEqual(t, b, nb.MemberID)
	assert.True(t, strings.HasPrefix(nb.MemberID, "i2-"))
	assert.Equal(t, a, nb.LeaderID)
	assert.Empty(t, nb.Members)
	assert.False(t, nb.SkipAssignment)
	assert.Equal(t, int16(0), classicBeat(ctx, t, br, a, "i1", gen), "a goes on in its generation")
	sb := classicSync(ctx, t, br, nb.MemberID, "i2", gen, nil)
	require.Equal(t, int16(0), sb.ErrorCode)
	assert.Equal(t, "B", string(sb.MemberAssignment), "the assignment its instance had")

	assert.Equal(t, int16(82), classicBeat(ctx, t, br, b, "i2", gen), "FENCED_INSTANCE_ID: heartbeat of the member replaced")
	assert.Equal(t, int16(82), classicSync(ctx, t, br, b, "i2", gen, nil).ErrorCode, "FENCED_INSTANCE_ID: its sync")
	assert.Equal(t, int16(82), classicCommit(ctx, t, br, b, "i2", gen), "FENCED_INSTANCE_ID: its commit")
	assert.Equal(t, int16(82), requestJoin(ctx, t, br, classicJoinReq(b, "i2", "b", 30000, 10000)).ErrorCode, "FENCED_INSTANCE_ID: its join")
	assert.Equal(t, int16(25), classicBeat(ctx, t, br, b, "", gen), "UNKNOWN_MEMBER_ID: its ID without the instance")
	assert.Equal(t, int16(25), classicBeat(ctx, t, br, a, "i9", gen), "UNKNOWN_MEMBER_ID: an instance the group has no member of")
	assert.Equal(t, int16(82), classicBeat(ctx, t, br, a, "i2", gen), "FENCED_INSTANCE_ID: another member's instance")
	assert.Equal(t, int16(0), classicCommit(ctx, t, br, nb.MemberID, "i2", gen), "the member in its place commits")

	members := describeMembers(ctx, t, br)
	require.Len(t, members, 2)
	got := map[string]string{}
	for _, m := range members {
		require.NotNil(t, m.InstanceID)
		got[*m.InstanceID] = m.MemberID
	}
	assert.Equal(t, map[string]string{"i1": a, "i2": nb.MemberID}, got, "DescribeGroups shows the instance IDs")

	// The leader restarts: told it leads, with the members, and to skip
	// the assignment.
	na := requestJoin(ctx, t, br, classicJoinReq("", "i1", "a", 30000, 10000))
	require.Equal(t, int16(9), na.GetVersion())
	require.Equal(t, int16(0), na.ErrorCode)
	assert.Equal(t, gen, na.Generation, "no rebalance")
	assert.Equal(t, na.MemberID, na.LeaderID)
	assert.True(t, na.SkipAssignment)
	require.Len(t, na.Members, 2)
	for _, m := range na.Members {
		require.NotNil(t, m.InstanceID)
		assert.Contains(t, []string{na.MemberID + "/i1", nb.MemberID + "/i2"}, m.MemberID+"/"+*m.InstanceID)
	}
	sa := classicSync(ctx, t, br, na.MemberID, "i1", gen, nil)
	require.Equal(t, int16(0), sa.ErrorCode)
	assert.Equal(t, "A", string(sa.MemberAssignment))
	assert.Equal(t, int16(82), classicBeat(ctx, t, br, a, "i1", gen))

	// Again through JoinGroup v8: the former leader ID, no members.
	v8 := kversion.Stable()
	v8.SetMaxKeyVersion(11, 8)
	old := kclient(t, addr, kgo.MaxVersions(v8)).SeedBrokers()[0]
	resp, err := old.Request(ctx, classicJoinReq("", "i1", "a", 30000, 10000))
	require.NoError(t, err)
	nna := resp.(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(8), nna.GetVersion())
	require.Equal(t, int16(0), nna.ErrorCode)
	assert.Equal(t, gen, nna.Generation)
	assert.Equal(t, na.MemberID, nna.LeaderID, "the leader's ID before the restart")
	assert.Empty(t, nna.Members)
	sa = classicSync(ctx, t, br, nna.MemberID, "i1", gen, nil)
	require.Equal(t, int16(0), sa.ErrorCode)
	assert.Equal(t, "A", string(sa.MemberAssignment))
}

// TestGroups_StaticMemberJoinFencesTheWaitingOne: a member joining with
// the instance ID of a member whose join is waiting in a rebalance takes
// its place; the waiting join is answered FENCED_INSTANCE_ID, as from
// Kafka, and the newcomer is in the generation that follows, as leader
// in the replaced leader's place. Before, both were members.
func TestGroups_StaticMemberJoinFencesTheWaitingOne(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br, a, b, gen := staticPair(ctx, t, addr)

	waiting := joinAsync(ctx, t, addr, classicJoinReq(a, "i1", "a", 30000, 10000))
	require.Eventually(t, func() bool {
		return classicBeat(ctx, t, br, b, "i2", gen) == 27
	}, 30*time.Second, 10*time.Millisecond, "a's join begins a rebalance")
	second := joinAsync(ctx, t, addr, classicJoinReq("", "i1", "a", 30000, 10000))
	r := <-waiting
	require.NotNil(t, r)
	assert.Equal(t, int16(82), r.ErrorCode, "FENCED_INSTANCE_ID")

	rb := requestJoin(ctx, t, br, classicJoinReq(b, "i2", "b", 30000, 10000))
	require.Equal(t, int16(0), rb.ErrorCode)
	ra := <-second
	require.NotNil(t, ra)
	require.Equal(t, int16(0), ra.ErrorCode)
	assert.Equal(t, gen+1, ra.Generation)
	assert.NotEqual(t, a, ra.MemberID)
	assert.Equal(t, ra.MemberID, ra.LeaderID, "the leader's place")
	assert.Equal(t, ra.MemberID, rb.LeaderID)
	ids := []string{}
	for _, m := range ra.Members {
		ids = append(ids, m.MemberID)
	}
	assert.ElementsMatch(t, []string{ra.MemberID, b}, ids)
}

// TestGroups_LeaveGroupByInstanceID: a LeaveGroup v3+ member named by its
// instance ID alone (an administrator's removal, as kafka-consumer-groups
// --delete-members does) removes the instance's member; one naming the
// member ID replaced with the instance gets FENCED_INSTANCE_ID, and an
// instance the group has no member of UNKNOWN_MEMBER_ID, as from Kafka.
// Before, members were looked up by member ID only.
func TestGroups_LeaveGroupByInstanceID(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br, a, b, gen := staticPair(ctx, t, addr)
	nb := requestJoin(ctx, t, br, classicJoinReq("", "i2", "b", 30000, 10000))
	require.Equal(t, int16(0), nb.ErrorCode)

	leave := func(id, instance string) int16 {
		lg := kmsg.NewPtrLeaveGroupRequest()
		lg.Group = "g"
		lg.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id, InstanceID: kmsg.StringPtr(instance)}}
		resp, err := br.Request(ctx, lg)
		require.NoError(t, err)
		r := resp.(*kmsg.LeaveGroupResponse)
		require.Equal(t, int16(0), r.ErrorCode)
		require.Len(t, r.Members, 1)
		return r.Members[0].ErrorCode
	}
	assert.Equal(t, int16(82), leave(b, "i2"), "FENCED_INSTANCE_ID: the member replaced")
	assert.Equal(t, int16(25), leave("", "i9"), "UNKNOWN_MEMBER_ID: no member of that instance")
	assert.Equal(t, int16(0), classicBeat(ctx, t, br, a, "i1", gen), "nothing changed")
	assert.Equal(t, int16(0), leave("", "i2"), "by the instance alone")
	assert.Equal(t, int16(25), classicBeat(ctx, t, br, nb.MemberID, "", gen), "removed")
	assert.Equal(t, int16(27), classicBeat(ctx, t, br, a, "i1", gen), "a rebalance")
	members := describeMembers(ctx, t, br)
	require.Len(t, members, 1)
	assert.Equal(t, a, members[0].MemberID)
}

// TestGroups_StaticMemberKeptThroughARebalance: a static member that does
// not join again in a rebalance stays in the group, in the leader's list
// of members (its assignment waits for its instance), as Kafka keeps it,
// until its session runs out; the leader, if it was, is a member that
// joined. Before, it was dropped with the dynamic members that did not
// join again.
func TestGroups_StaticMemberKeptThroughARebalance(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	br := kclient(t, serve(t, e, nil)).SeedBrokers()[0]

	s := requestJoin(ctx, t, br, classicJoinReq("", "i1", "s", 6000, 1000))
	require.Equal(t, int16(0), s.ErrorCode)
	require.Equal(t, int16(0), classicSync(ctx, t, br, s.MemberID, "i1", s.Generation, map[string]string{s.MemberID: "S"}).ErrorCode)

	d := requestJoin(ctx, t, br, classicJoinReq("", "", "d", 30000, 1000))
	require.Equal(t, int16(0), d.ErrorCode)
	assert.Equal(t, s.Generation+1, d.Generation)
	assert.Equal(t, d.MemberID, d.LeaderID, "a member that joined leads")
	ids := []string{}
	for _, m := range d.Members {
		ids = append(ids, m.MemberID)
	}
	slices.Sort(ids)
	want := []string{s.MemberID, d.MemberID}
	slices.Sort(want)
	assert.Equal(t, want, ids, "the static member is kept")

	require.Eventually(t, func() bool {
		return !slices.ContainsFunc(describeMembers(ctx, t, br), func(m kmsg.DescribeGroupsResponseGroupMember) bool {
			return m.MemberID == s.MemberID
		})
	}, 30*time.Second, 50*time.Millisecond, "dropped after its session")
}

// TestKgo_StaticMemberRestartKeepsItsPartitions: franz-go consumers with
// kgo.InstanceID: one closed (a static member does not leave) and started
// again gets the partitions it had, in the same generation: the other
// member is not disturbed. DescribeGroups shows the instance IDs.
func TestKgo_StaticMemberRestartKeepsItsPartitions(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 4})
	ctx := testCtx(t)
	type member struct {
		cl       *kgo.Client
		mu       sync.Mutex
		assigned []int32
	}
	start := func(instance string) *member {
		m := &member{}
		m.cl = kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.InstanceID(instance),
			kgo.SessionTimeout(10*time.Second), kgo.RebalanceTimeout(5*time.Second), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.assigned = append(m.assigned, ps["t"]...)
				slices.Sort(m.assigned)
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				m.mu.Lock()
				defer m.mu.Unlock()
				m.assigned = slices.DeleteFunc(m.assigned, func(p int32) bool { return slices.Contains(ps["t"], p) })
			}))
		go func() {
			for ctx.Err() == nil && !m.cl.PollFetches(ctx).IsClientClosed() {
			}
		}()
		return m
	}
	owned := func(m *member) []int32 {
		m.mu.Lock()
		defer m.mu.Unlock()
		return slices.Clone(m.assigned)
	}
	m1 := start("i1")
	require.Eventually(t, func() bool { return len(owned(m1)) == 4 }, 30*time.Second, 10*time.Millisecond)
	m2 := start("i2")
	require.Eventually(t, func() bool { return len(owned(m1)) == 2 && len(owned(m2)) == 2 }, 30*time.Second, 10*time.Millisecond)
	had := owned(m2)
	_, gen := m2.cl.GroupMetadata()
	m2.cl.Close()

	m3 := start("i2")
	require.Eventually(t, func() bool { return len(owned(m3)) == 2 }, 30*time.Second, 10*time.Millisecond)
	assert.Equal(t, had, owned(m3), "the partitions its instance had")
	_, gen3 := m3.cl.GroupMetadata()
	assert.Equal(t, gen, gen3, "no rebalance")
	assert.Len(t, owned(m1), 2)

	gs, err := kadmin(t, addr).DescribeGroups(ctx, "g")
	require.NoError(t, err)
	instances := []string{}
	for _, m := range gs["g"].Members {
		require.NotNil(t, m.InstanceID)
		instances = append(instances, *m.InstanceID)
	}
	assert.Equal(t, []string{"i1", "i2"}, instances)
}
