package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestConsumerGroup_JoinNeedsRebalanceTimeoutAndOwnedPartitions: a KIP-848
// join (member epoch 0) whose rebalance timeout is -1 (the "unchanged"
// of later heartbeats), or whose list of owned partitions is null rather
// than empty, is refused with INVALID_REQUEST at every version, as
// Kafka's coordinator refuses it; nothing of the group is made. Before,
// the listener took -1 for its one-minute default and a null list for an
// empty one. Kafka refuses no other rebalance timeout (0 is taken), and
// asks neither of a heartbeat of a later epoch, which leaves both out
// when nothing changed.
func TestConsumerGroup_JoinNeedsRebalanceTimeoutAndOwnedPartitions(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	v1 := kclient(t, addr).SeedBrokers()[0]
	v0versions := kversion.Stable()
	v0versions.SetMaxKeyVersion(68, 0) // ConsumerGroupHeartbeat
	v0 := kclient(t, addr, kgo.MaxVersions(v0versions)).SeedBrokers()[0]

	join := func(b *kgo.Broker, member string, rebalance int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", member, 0, rebalance
		hb.SubscribedTopicNames = []string{"t"}
		hb.Topics = owned
		resp, err := b.Request(ctx, hb)
		require.NoError(t, err)
		return resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	}
	empty := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, tc := range []struct {
		name      string
		v0        bool
		rebalance int32
		owned     []kmsg.ConsumerGroupHeartbeatRequestTopic
	}{
		{"rebalance timeout -1", false, -1, empty},
		{"rebalance timeout -1, v0", true, -1, empty},
		{"null owned partitions", false, 30000, nil},
		{"null owned partitions, v0", true, 30000, nil},
	} {
		b := v1
		if tc.v0 {
			b = v0
		}
		r := join(b, "m1", tc.rebalance, tc.owned)
		if tc.v0 {
			require.Equal(t, int16(0), r.GetVersion())
		}
		assert.Equal(t, kerr.InvalidRequest.Code, r.ErrorCode, tc.name)
		assert.NotNil(t, r.ErrorMessage, tc.name)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	resp, err := v1.Request(ctx, dg)
	require.NoError(t, err)
	assert.Equal(t, "Dead", resp.(*kmsg.DescribeGroupsResponse).Groups[0].State, "no group was made")

	// A rebalance timeout of 0 is taken, as in Kafka.
	r := join(v1, "m1", 0, empty)
	require.Equal(t, int16(0), r.ErrorCode)
	epoch := r.MemberEpoch

	// A later heartbeat that leaves out what did not change (-1, a null
	// list) is fine.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch = "g", "m1", epoch
	require.Equal(t, int32(-1), hb.RebalanceTimeoutMillis)
	resp, err = v1.Request(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, int16(0), resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
}
