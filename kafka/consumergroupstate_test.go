package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue/kafka"
)

// TestConsumerGroup_StateFollowsTheReconciliation: a KIP-848 group is
// described, by DescribeGroups, ListGroups and ConsumerGroupDescribe
// alike, in the states Kafka gives a consumer group: Reconciling while
// some member is not at the target assignment's epoch or does not hold
// exactly its target (a partition it waits for is still another
// member's), Assigning while the group epoch is ahead of the target's (a
// member left and no heartbeat has computed the target again), Stable
// once every member holds its target. Before, DescribeGroups and
// ListGroups said Stable whenever the group had members, and
// ConsumerGroupDescribe said Stable for a member still waiting for a
// partition and for a group whose target was not computed yet.
func TestConsumerGroup_StateFollowsTheReconciliation(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	addr := serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	states := func() (described, listed, consumer string) {
		t.Helper()
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"g"}
		resp, err := b.Request(ctx, dg)
		require.NoError(t, err)
		described = resp.(*kmsg.DescribeGroupsResponse).Groups[0].State
		resp, err = b.Request(ctx, kmsg.NewPtrListGroupsRequest())
		require.NoError(t, err)
		for _, g := range resp.(*kmsg.ListGroupsResponse).Groups {
			if g.Group == "g" {
				listed = g.GroupState
			}
		}
		cd := kmsg.NewPtrConsumerGroupDescribeRequest()
		cd.Groups = []string{"g"}
		resp, err = b.Request(ctx, cd)
		require.NoError(t, err)
		consumer = resp.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].State
		return described, listed, consumer
	}
	assertState := func(want, why string) {
		t.Helper()
		described, listed, consumer := states()
		assert.Equal(t, want, described, "DescribeGroups: %s", why)
		assert.Equal(t, want, listed, "ListGroups: %s", why)
		assert.Equal(t, want, consumer, "ConsumerGroupDescribe: %s", why)
	}

	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	assertState("Stable", "a lone member holds everything")

	c := &cgMember{t: t, b: b, id: "member-c"}
	require.Equal(t, int16(0), c.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Empty(t, c.owned)
	assertState("Reconciling", "a still holds c's partition")

	require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, []int32{0}, a.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode) // released partition 1
	assertState("Reconciling", "c has not taken partition 1 yet")

	require.Equal(t, int16(0), c.beat(ctx, tid, nil, true).ErrorCode)
	require.Equal(t, []int32{1}, c.owned)
	assertState("Stable", "each member holds its target")

	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: c.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)
	assertState("Assigning", "c left: the target is not computed again yet")

	require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode)
	require.Equal(t, []int32{0, 1}, a.owned)
	assertState("Stable", "a took c's partition")

	lg := kmsg.NewPtrListGroupsRequest()
	lg.StatesFilter = []string{"Stable"}
	resp, err := b.Request(ctx, lg)
	require.NoError(t, err)
	require.Len(t, resp.(*kmsg.ListGroupsResponse).Groups, 1, "the states filter reads the same state")
}
