package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue/kafka"
)

// TestConsumerGroup_RebalanceTimeoutZeroIsTaken: a KIP-848 member's
// rebalance timeout is the one it gives, 0 too, at its join or at a later
// heartbeat (only -1 is "unchanged"), as Kafka's coordinator takes it: a
// member of timeout 0 that is told to give up a partition and does not
// report it released is dropped at once, and the partition moves on.
// Before, the listener took only a positive timeout, and kept the
// one-minute default (or the timeout given before) for 0.
func TestConsumerGroup_RebalanceTimeoutZeroIsTaken(t *testing.T) {
	for _, tc := range []struct {
		name       string
		join, next int32 // the rebalance timeouts of a's join and of its next heartbeat
	}{
		{"at the join", 0, -1},
		{"at a later heartbeat", 60000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: 30 * time.Second})
			b := kclient(t, addr).SeedBrokers()[0]
			tid := topicIDOf(ctx, t, b, "t")

			hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis = "g", "a", tc.join
			hb.SubscribedTopicNames = []string{"t"}
			hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			resp, err := b.Request(ctx, hb)
			require.NoError(t, err)
			r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
			require.Equal(t, int16(0), r.ErrorCode)
			require.NotNil(t, r.Assignment)
			require.Len(t, r.Assignment.Topics, 1)
			a := &cgMember{t: t, b: b, id: "a", epoch: r.MemberEpoch, owned: r.Assignment.Topics[0].Partitions}
			require.Equal(t, []int32{0, 1}, a.owned)

			// a's next heartbeat reports what it owns, with the second
			// timeout (-1: unchanged).
			hb = kmsg.NewPtrConsumerGroupHeartbeatRequest()
			hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "a", a.epoch, tc.next
			hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid, Partitions: []int32{0, 1}}}
			resp, err = b.Request(ctx, hb)
			require.NoError(t, err)
			require.Equal(t, int16(0), resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

			bm := &cgMember{t: t, b: b, id: "b"}
			require.Equal(t, int16(0), bm.beat(ctx, tid, []string{"t"}, false).ErrorCode)
			assert.Empty(t, bm.owned, "a holds both")
			require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode) // told to give one up; never reports it
			assert.Len(t, a.owned, 1)
			require.Eventually(t, func() bool {
				require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
				return len(bm.owned) == 2
			}, 20*time.Second, 50*time.Millisecond, "a is dropped once its rebalance timeout of 0 passed; b gets both")
			assert.Equal(t, int16(25), a.beat(ctx, tid, nil, false).ErrorCode, "UNKNOWN_MEMBER_ID: a was dropped")
		})
	}
}
