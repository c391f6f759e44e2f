package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dynamicPair makes classic group "g" of two dynamic members: a (the
// leader, metadata "a", assigned "A") and b (metadata "b", assigned "B"),
// both of the generation returned, Stable. The rebalance timeout is short
// (3 s), so that a rebalance nobody completes ends soon.
func dynamicPair(ctx context.Context, t *testing.T, addr string) (br *kgo.Broker, a, b string, gen int32) {
	t.Helper()
	return classicPair(ctx, t, addr, "", "", 3000)
}

// classicPair makes classic group "g" of two members, of instance IDs ia
// and ib ("" for a dynamic member): a (the leader, metadata "a", assigned
// "A") and b (metadata "b", assigned "B"), both of the generation
// returned, Stable, with the given rebalance timeout (ms). A dynamic b is
// first told MEMBER_ID_REQUIRED, as Kafka tells it.
func classicPair(ctx context.Context, t *testing.T, addr, ia, ib string, rebalance int32) (br *kgo.Broker, a, b string, gen int32) {
	t.Helper()
	br = kclient(t, addr).SeedBrokers()[0]
	ja := requestJoin(ctx, t, br, classicJoinReq("", ia, "a", 30000, rebalance))
	require.Equal(t, int16(0), ja.ErrorCode, "a joins at once")
	require.Equal(t, ja.MemberID, ja.LeaderID)
	require.Equal(t, int16(0), classicSync(ctx, t, br, ja.MemberID, ia, ja.Generation, map[string]string{ja.MemberID: "A"}).ErrorCode)

	bID := ""
	if ib == "" {
		resp, err := br.Request(ctx, classicJoinReq("", "", "b", 30000, rebalance))
		require.NoError(t, err)
		first := resp.(*kmsg.JoinGroupResponse)
		require.Equal(t, int16(79), first.ErrorCode, "MEMBER_ID_REQUIRED")
		bID = first.MemberID
	}
	jb := joinAsync(ctx, t, addr, classicJoinReq(bID, ib, "b", 30000, rebalance))
	require.Eventually(t, func() bool {
		return classicBeat(ctx, t, br, ja.MemberID, ia, ja.Generation) == 27
	}, 30*time.Second, 10*time.Millisecond, "b's join begins a rebalance")
	ja = requestJoin(ctx, t, br, classicJoinReq(ja.MemberID, ia, "a", 30000, rebalance))
	require.Equal(t, int16(0), ja.ErrorCode)
	require.Equal(t, ja.MemberID, ja.LeaderID)
	require.Len(t, ja.Members, 2)
	rb := <-jb
	require.NotNil(t, rb)
	require.Equal(t, int16(0), rb.ErrorCode)
	require.Equal(t, ja.Generation, rb.Generation)
	require.Equal(t, int16(0), classicSync(ctx, t, br, ja.MemberID, ia, ja.Generation, map[string]string{ja.MemberID: "A", rb.MemberID: "B"}).ErrorCode)
	sb := classicSync(ctx, t, br, rb.MemberID, ib, rb.Generation, nil)
	require.Equal(t, int16(0), sb.ErrorCode)
	require.Equal(t, "B", string(sb.MemberAssignment))
	return br, ja.MemberID, rb.MemberID, ja.Generation
}

// TestGroups_FollowerRejoinInStableKeepsTheGeneration: a member that is
// not the leader and joins again under its member ID, with the protocols
// and metadata it has, while the group is Stable (a client that lost its
// join answer, or franz-go's consumer rejoining after a commit error) is
// answered at once with the current generation, no members and the
// leader's ID, as Kafka's coordinator answers it: no rebalance begins, the
// leader's heartbeat stays clean, and the member's sync gets the
// assignment it has. Before, every such join began a rebalance, which
// moved every member's partitions (or, with a member that did not rejoin
// in time, dropped it).
func TestGroups_FollowerRejoinInStableKeepsTheGeneration(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br, a, b, gen := dynamicPair(ctx, t, addr)

	rb := requestJoin(ctx, t, br, classicJoinReq(b, "", "b", 30000, 3000))
	require.Equal(t, int16(0), rb.ErrorCode)
	assert.Equal(t, gen, rb.Generation, "no rebalance")
	assert.Equal(t, b, rb.MemberID)
	assert.Equal(t, a, rb.LeaderID)
	assert.Empty(t, rb.Members, "a follower is not given the members")
	require.NotNil(t, rb.Protocol)
	assert.Equal(t, "range", *rb.Protocol)
	assert.Equal(t, int16(0), classicBeat(ctx, t, br, a, "", gen), "the leader is not told to rejoin")
	assert.Equal(t, int16(0), classicBeat(ctx, t, br, b, "", gen))
	sb := classicSync(ctx, t, br, b, "", gen, nil)
	require.Equal(t, int16(0), sb.ErrorCode)
	assert.Equal(t, "B", string(sb.MemberAssignment), "the assignment it has")
	assert.Equal(t, int16(0), classicCommit(ctx, t, br, b, "", gen))
}

// TestGroups_LeaderOrChangedMetadataRejoinRebalances: in a Stable group
// the leader joining again, with the same metadata, begins a rebalance (a
// leader rejoins to have the partitions assigned anew, as when a
// subscribed topic grows), and so does a follower joining with metadata
// of its own that changed, as in Kafka.
func TestGroups_LeaderOrChangedMetadataRejoinRebalances(t *testing.T) {
	for _, tc := range []struct {
		name     string
		leader   bool
		metadata string
	}{
		{"leader, same metadata", true, "a"},
		{"follower, changed metadata", false, "b2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			addr := serve(t, e, nil)
			br, a, b, gen := dynamicPair(ctx, t, addr)
			joiner, joinerMeta, other, otherMeta := b, tc.metadata, a, "a"
			if tc.leader {
				joiner, other, otherMeta = a, b, "b"
			}
			jr := joinAsync(ctx, t, addr, classicJoinReq(joiner, "", joinerMeta, 30000, 3000))
			require.Eventually(t, func() bool {
				return classicBeat(ctx, t, br, other, "", gen) == 27
			}, 30*time.Second, 10*time.Millisecond, "the join begins a rebalance")
			ro := requestJoin(ctx, t, br, classicJoinReq(other, "", otherMeta, 30000, 3000))
			require.Equal(t, int16(0), ro.ErrorCode)
			rj := <-jr
			require.NotNil(t, rj)
			require.Equal(t, int16(0), rj.ErrorCode)
			assert.Equal(t, gen+1, rj.Generation)
			assert.Equal(t, gen+1, ro.Generation)
			assert.Equal(t, a, rj.LeaderID, "the leader stays the leader")
		})
	}
}

// completingPair makes classic group "g" of dynamicPair's members a (the
// leader) and b, then has b join again with metadata "b2", which begins a
// rebalance that a joins too: both are of the generation returned, and
// the group is CompletingRebalance, neither having synced.
func completingPair(ctx context.Context, t *testing.T, addr string) (br *kgo.Broker, a, b string, gen int32) {
	t.Helper()
	br, a, b, stable := dynamicPair(ctx, t, addr)
	jb := joinAsync(ctx, t, addr, classicJoinReq(b, "", "b2", 30000, 3000))
	require.Eventually(t, func() bool {
		return classicBeat(ctx, t, br, a, "", stable) == 27
	}, 30*time.Second, 10*time.Millisecond, "b's new metadata begins a rebalance")
	ja := requestJoin(ctx, t, br, classicJoinReq(a, "", "a", 30000, 3000))
	require.Equal(t, int16(0), ja.ErrorCode)
	require.Equal(t, a, ja.LeaderID)
	rb := <-jb
	require.NotNil(t, rb)
	require.Equal(t, int16(0), rb.ErrorCode)
	require.Equal(t, stable+1, ja.Generation)
	require.Equal(t, stable+1, rb.Generation)
	return br, a, b, ja.Generation
}

// TestGroups_RejoinInCompletingRebalanceKeepsTheGeneration: a member that
// joins again under its member ID, with the protocols and metadata it
// has, while the group waits for the leader's assignment
// (CompletingRebalance: a client that lost its join answer) is answered at
// once with the current generation, as Kafka's coordinator answers it: the
// leader's answer lists the members again, a follower's lists none. No
// rebalance begins, and the generation completes with the syncs. The
// leader too, unlike in a Stable group: it has not assigned anything yet.
// Before, such a join began a rebalance, which, with the other member
// waiting in its sync, dropped that member when the rebalance timeout
// passed.
func TestGroups_RejoinInCompletingRebalanceKeepsTheGeneration(t *testing.T) {
	for _, leader := range []bool{false, true} {
		name := "follower"
		if leader {
			name = "leader"
		}
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			addr := serve(t, e, nil)
			br, a, b, gen := completingPair(ctx, t, addr)
			joiner, meta, other := b, "b2", a
			if leader {
				joiner, meta, other = a, "a", b
			}

			r := requestJoin(ctx, t, br, classicJoinReq(joiner, "", meta, 30000, 3000))
			require.Equal(t, int16(0), r.ErrorCode)
			assert.Equal(t, gen, r.Generation, "no rebalance")
			assert.Equal(t, joiner, r.MemberID)
			assert.Equal(t, a, r.LeaderID)
			require.NotNil(t, r.Protocol)
			assert.Equal(t, "range", *r.Protocol)
			if leader {
				metadata := map[string]string{}
				for _, m := range r.Members {
					metadata[m.MemberID] = string(m.ProtocolMetadata)
				}
				assert.Equal(t, map[string]string{a: "a", b: "b2"}, metadata, "the leader is given the members again")
			} else {
				assert.Empty(t, r.Members, "a follower is not given the members")
			}
			assert.Equal(t, int16(0), classicBeat(ctx, t, br, other, "", gen), "the other member is not told to rejoin")

			// b's sync waits for a's, on a connection of its own.
			sg := kmsg.NewPtrSyncGroupRequest()
			sg.Group, sg.MemberID, sg.Generation = "g", b, gen
			bb := kclient(t, addr).SeedBrokers()[0]
			sb := make(chan *kmsg.SyncGroupResponse, 1)
			go func() {
				resp, err := bb.Request(ctx, sg)
				if err != nil {
					sb <- nil
					return
				}
				sb <- resp.(*kmsg.SyncGroupResponse)
			}()
			require.Equal(t, int16(0), classicSync(ctx, t, br, a, "", gen, map[string]string{a: "A", b: "B"}).ErrorCode)
			got := <-sb
			require.NotNil(t, got)
			require.Equal(t, int16(0), got.ErrorCode)
			assert.Equal(t, "B", string(got.MemberAssignment))
			assert.Equal(t, int16(0), classicCommit(ctx, t, br, b, "", gen))
		})
	}
}

// TestGroups_ChangedMetadataRejoinInCompletingRebalanceRebalances: in a
// group that waits for the leader's assignment, a member joining again
// with metadata that changed begins a rebalance, as in Kafka, which the
// other member joins: the generation rises and the leader stays.
func TestGroups_ChangedMetadataRejoinInCompletingRebalanceRebalances(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, nil)
	br, a, b, gen := completingPair(ctx, t, addr)

	jb := joinAsync(ctx, t, addr, classicJoinReq(b, "", "b3", 30000, 3000))
	require.Eventually(t, func() bool {
		return classicBeat(ctx, t, br, a, "", gen) == 27
	}, 30*time.Second, 10*time.Millisecond, "the join begins a rebalance")
	ra := requestJoin(ctx, t, br, classicJoinReq(a, "", "a", 30000, 3000))
	require.Equal(t, int16(0), ra.ErrorCode)
	rb := <-jb
	require.NotNil(t, rb)
	require.Equal(t, int16(0), rb.ErrorCode)
	assert.Equal(t, gen+1, ra.Generation)
	assert.Equal(t, gen+1, rb.Generation)
	assert.Equal(t, a, rb.LeaderID, "the leader stays the leader")
}
